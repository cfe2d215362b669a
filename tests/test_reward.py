"""Reward files: json first, txt second, every malformed case an error, never a default."""

from __future__ import annotations

from pathlib import Path

import pytest

from qaflow.errors import RewardError
from qaflow.reward import in_range, read_reward


def write(tmp_path: Path, name: str, text: str) -> Path:
    (tmp_path / name).write_text(text)
    return tmp_path


def test_txt_reward_is_read(tmp_path: Path):
    reward = read_reward(write(tmp_path, "reward.txt", "  1\n"))
    assert (reward.value, reward.full, reward.source) == (1.0, True, "reward.txt")
    assert read_reward(write(tmp_path, "reward.txt", "0.25")).value == 0.25


def test_json_wins_over_txt_and_full_needs_every_value(tmp_path: Path):
    write(tmp_path, "reward.txt", "1")
    write(tmp_path, "reward.json", '{"total": 1, "by_status": 0, "top_path": 1}')
    reward = read_reward(tmp_path)
    assert reward.source == "reward.json"
    assert reward.values == {"total": 1.0, "by_status": 0.0, "top_path": 1.0}
    assert reward.value == pytest.approx(2 / 3)
    assert not reward.full
    write(tmp_path, "reward.json", '{"reward": 1, "style": 1}')
    assert read_reward(tmp_path).full


@pytest.mark.parametrize(
    ("name", "text", "needle"),
    [
        ("reward.txt", "", "empty"),
        ("reward.txt", "   \n", "empty"),
        ("reward.txt", "PASSED", "not a number"),
        ("reward.txt", "nan", "finite"),
        ("reward.json", "", "empty"),
        ("reward.json", "{not json", "not valid JSON"),
        ("reward.json", "[1, 2]", "map names to numbers"),
        ("reward.json", "{}", "map names to numbers"),
        ("reward.json", '{"reward": "high"}', "not a number"),
        ("reward.json", '{"reward": true}', "not a number"),
    ],
)
def test_malformed_rewards_are_errors(tmp_path: Path, name: str, text: str, needle: str):
    with pytest.raises(RewardError, match=needle):
        read_reward(write(tmp_path, name, text))


def test_missing_reward_is_an_error(tmp_path: Path):
    with pytest.raises(RewardError, match="wrote no"):
        read_reward(tmp_path)


@pytest.mark.parametrize(
    ("name", "text", "shown"),
    [
        ("reward.txt", "1e308", "reward.txt: 1e+308 is outside [0, 1]"),
        ("reward.txt", "-5", "reward.txt: -5.0 is outside [0, 1]"),
        ("reward.txt", "1.0000001", "reward.txt: 1.0000001 is outside [0, 1]"),
        ("reward.json", '{"reward": 1, "style": 2}', "reward.json['style']: 2.0 is outside [0, 1]"),
    ],
)
def test_a_reward_outside_0_1_is_an_error_naming_the_value(tmp_path: Path, name: str, text: str, shown: str):
    reward = read_reward(write(tmp_path, name, text))  # parsed as given: the range is the trial's check
    with pytest.raises(RewardError) as err:
        in_range(reward)
    assert str(err.value) == shown
    (tmp_path / "ok").mkdir()
    assert in_range(read_reward(write(tmp_path / "ok", "reward.txt", "0.5"))).value == 0.5
