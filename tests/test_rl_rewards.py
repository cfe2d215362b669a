"""Effort-ordered rewards, reference lengths and advantages against hand-computed tables."""

from __future__ import annotations

import math

import polars as pl
import pytest

from qaflow.models.frame import records_to_frame
from qaflow.models.rollout import Effort
from rl.advantage import AdvantageMode, advantages, score
from rl.reference import reference_table
from rl.reward import RewardConfig, effort_reward
from tests.trajectories import make_record

CONFIG = RewardConfig(min_successes=2, floor=50.0)


def attempt(
    effort: str, k: int, thinking: int, passed: bool = True, task: str = "t", round: int = 0, model: str = "m", **fields
):
    return make_record(
        task=task,
        effort=effort,
        attempt=k,
        thinking_tokens=thinking,
        reward=1.0 if passed else 0.0,
        round=round,
        model=model,
        **fields,
    )


def refs(records, config=CONFIG) -> dict[str, float | None]:
    table = reference_table(records_to_frame(records), config)
    return dict(table.select("effort", "reference").iter_rows())


def test_reward_table() -> None:
    assert effort_reward(False, 10, 100.0, CONFIG) == 0.0  # failure is 0 however short
    assert effort_reward(True, 10_000, None, CONFIG) == 1.0  # no reference: correctness only
    assert effort_reward(True, 60, 100.0, CONFIG) == 1.0  # no bonus below the reference
    assert effort_reward(True, 100, 100.0, CONFIG) == 1.0
    assert effort_reward(True, 200, 100.0, CONFIG) == pytest.approx(0.5 + 0.5 * math.exp(-1))  # 0.6839
    assert effort_reward(True, 10**9, 100.0, CONFIG) >= 0.5 > effort_reward(False, 0, 100.0, CONFIG)
    assert effort_reward(True, 200, 100.0, RewardConfig(phi="reciprocal")) == pytest.approx(0.75)
    assert effort_reward(True, 150, 100.0, RewardConfig(phi="linear")) == pytest.approx(0.75)
    assert effort_reward(True, 300, 100.0, RewardConfig(phi="linear")) == pytest.approx(0.5)


def test_low_is_referenced_to_the_shorter_of_medium_and_xhigh() -> None:
    records = [
        attempt("low", 0, 500),
        attempt("medium", 0, 300), attempt("medium", 1, 500), attempt("medium", 2, 9000, passed=False),
        attempt("xhigh", 0, 900), attempt("xhigh", 1, 1100),
    ]  # fmt: skip
    assert refs(records) == {"low": 400.0, "medium": 1000.0, "xhigh": None}
    # medium alone (xhigh gone): low -> medium's 400, medium -> none
    no_xhigh = [r for r in records if r.effort != "xhigh"]
    assert refs(no_xhigh) == {"low": 400.0, "medium": None}


def test_no_reference_with_too_few_successes_and_the_floor() -> None:
    few = [attempt("low", 0, 500), attempt("medium", 0, 300), attempt("medium", 1, 999, passed=False)]
    assert refs(few) == {"low": None, "medium": None}  # one success is not enough (min_successes=2)
    floored = [attempt("low", 0, 500), attempt("xhigh", 0, 10), attempt("xhigh", 1, 30)]
    assert refs(floored)["low"] == 50.0  # median 20 raised to the floor


def test_references_stay_within_their_round_and_policy() -> None:
    records = [
        attempt("low", 0, 500, round=1),
        attempt("xhigh", 0, 100, round=0), attempt("xhigh", 1, 100, round=0),  # older round: not used
        attempt("xhigh", 0, 800, round=1, model="other"), attempt("xhigh", 1, 800, round=1, model="other"),
    ]  # fmt: skip
    table = reference_table(records_to_frame(records), CONFIG)
    low = table.filter(pl.col("effort") == "low").row(0, named=True)
    assert low["reference"] is None


def test_rewards_and_mean_advantages_without_std() -> None:
    records = [
        attempt("low", 0, 400), attempt("low", 1, 404), attempt("low", 2, 100, passed=False),
        attempt("medium", 0, 400), attempt("medium", 1, 400),
    ]  # fmt: skip
    scored = score(records_to_frame(records), CONFIG)
    low = scored.filter(pl.col("effort") == "low").sort("attempt")
    assert low["reference"].to_list() == [400.0, 400.0, 400.0]
    assert low["rl_reward"].to_list() == pytest.approx([1.0, 0.5 + 0.5 * math.exp(-0.01), 0.0])
    adv = advantages(scored).filter(pl.col("effort") == "low").sort("attempt")["advantage"].to_list()
    mean = (1.0 + 0.5 + 0.5 * math.exp(-0.01)) / 3
    assert adv == pytest.approx([1.0 - mean, 0.5 + 0.5 * math.exp(-0.01) - mean, -mean])
    medium = advantages(scored).filter(pl.col("effort") == "medium")["advantage"].to_list()
    assert medium == [0.0, 0.0]  # equal rewards give 0


def test_two_successes_at_1_and_0_98_get_plus_minus_0_01() -> None:
    frame = pl.DataFrame(
        {
            "task_version": ["v", "v"],
            "round": [0, 0],
            "model": ["m", "m"],
            "effort": ["low", "low"],
            "rl_reward": [1.0, 0.98],
        }
    )
    assert advantages(frame)["advantage"].to_list() == pytest.approx([0.01, -0.01])
    assert advantages(frame, "std")["advantage"].to_list() == pytest.approx([1.0, -1.0], rel=1e-3)
    assert advantages(frame, "rloo")["advantage"].to_list() == pytest.approx([0.02, -0.02])


def test_advantage_groups_are_task_round_policy_effort() -> None:
    frame = pl.DataFrame(
        {
            "task_version": ["a", "a", "b", "a"],
            "round": [0, 0, 0, 1],
            "model": ["m"] * 4,
            "effort": ["low"] * 4,
            "rl_reward": [1.0, 0.0, 1.0, 0.0],
        }
    )
    assert advantages(frame)["advantage"].to_list() == [0.5, -0.5, 0.0, 0.0]


def test_a_timed_out_attempt_the_verifier_passed_is_a_failure_and_no_reference() -> None:
    from rl.graded import split_graded, timed_out_passed_expr

    records = [
        attempt("low", 0, 100),
        attempt("low", 1, 100, exit_status="agent_timeout"),  # hit a limit; the verifier passed the sandbox
        attempt("xhigh", 0, 900), attempt("xhigh", 1, 1100),
        attempt("xhigh", 2, 10, exit_status="agent_timeout"), attempt("xhigh", 3, 10, exit_status="agent_timeout"),
    ]  # fmt: skip
    frame = records_to_frame(records)
    graded, left_out = split_graded(frame)
    assert graded.height == 6 and left_out.height == 0  # graded: the verifier scored them
    assert graded.filter(timed_out_passed_expr()).height == 3
    scored = score(graded, CONFIG).sort("effort", "attempt")
    assert scored["success"].to_list() == [True, False, True, True, False, False]
    assert scored["rl_reward"].to_list() == [1.0, 0.0, 1.0, 1.0, 0.0, 0.0]
    # the timed-out passes do not enter the reference: xhigh's median of 900 and 1100, not of all four
    assert scored["reference"].to_list()[:2] == [1000.0, 1000.0]


def test_the_default_floor_is_the_low_budget_of_256_tokens() -> None:
    from sft.local_llm import DEFAULT_BUDGETS

    config = RewardConfig()
    assert config.floor == 256.0 == DEFAULT_BUDGETS[Effort.LOW]
    # xhigh's successes think a median of 40 tokens: low's reference is 256, so 200 thinking tokens cost nothing
    records = [attempt("low", 0, 200), attempt("low", 1, 512), attempt("xhigh", 0, 30), attempt("xhigh", 1, 50)]
    scored = score(records_to_frame(records), config).sort("effort", "attempt")
    assert scored["reference"].to_list()[:2] == [256.0, 256.0]
    assert scored["rl_reward"].to_list()[:2] == pytest.approx([1.0, 0.5 + 0.5 * math.exp(-1)])


@pytest.mark.parametrize("mode", ["mean", "std", "rloo"])
def test_a_group_of_equal_rewards_gets_exactly_zero_in_every_mode(mode: AdvantageMode) -> None:
    """0.1 three times has a float mean of 0.10000000000000002: without the equal-group rule `r - mean` is not 0."""
    scored = pl.DataFrame(
        {
            "task_version": ["v"] * 4,
            "round": [0] * 4,
            "model": ["m"] * 4,
            "effort": ["low"] * 3 + ["medium"],
            "rl_reward": [0.1, 0.1, 0.1, 0.7],
        }
    )
    assert advantages(scored, mode).get_column("advantage").to_list() == [0.0, 0.0, 0.0, 0.0]
