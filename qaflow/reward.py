"""Reading the verifier's reward: `reward.json` first, else `reward.txt`; never a silent default.

A missing, empty or non-numeric reward is a `RewardError`, recorded as such by the trial.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

from pydantic import BaseModel

from qaflow.errors import RewardError

FULL_REWARD = 1.0


class Reward(BaseModel):
    value: float
    """The scalar reward: reward.txt's number, or reward.json's "reward" key, else the mean of its values."""
    values: dict[str, float]
    """Every named value (reward.txt gives {"reward": value})."""
    source: str
    """Which file it came from: reward.json or reward.txt."""

    @property
    def full(self) -> bool:
        """Full reward: 1.0, or every reward.json value at 1.0."""
        return all(v >= FULL_REWARD for v in self.values.values())


def _number(raw: object, where: str) -> float:
    if isinstance(raw, bool) or not isinstance(raw, int | float | str):
        raise RewardError(f"{where}: {raw!r} is not a number")
    try:
        value = float(raw)
    except ValueError as e:
        raise RewardError(f"{where}: {raw!r} is not a number") from e
    if not math.isfinite(value):
        raise RewardError(f"{where}: {raw!r} is not a finite number")
    return value


def parse_reward_json(text: str) -> Reward:
    if not text.strip():
        raise RewardError("reward.json is empty")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise RewardError(f"reward.json is not valid JSON: {e}") from e
    if isinstance(data, int | float) and not isinstance(data, bool):
        values = {"reward": _number(data, "reward.json")}
    elif isinstance(data, dict) and data:
        values = {str(k): _number(v, f"reward.json[{k!r}]") for k, v in data.items()}
    else:
        raise RewardError("reward.json must map names to numbers")
    value = values["reward"] if "reward" in values else sum(values.values()) / len(values)
    return Reward(value=value, values=values, source="reward.json")


def parse_reward_txt(text: str) -> Reward:
    stripped = text.strip()
    if not stripped:
        raise RewardError("reward.txt is empty")
    value = _number(stripped, "reward.txt")
    return Reward(value=value, values={"reward": value}, source="reward.txt")


def read_reward(verifier_dir: Path) -> Reward:
    """Read the reward from a host copy of /logs/verifier.

    Raises:
        RewardError: when neither file exists, or the one found is empty or not numeric.
    """
    json_path = verifier_dir / "reward.json"
    txt_path = verifier_dir / "reward.txt"
    if json_path.is_file():
        return parse_reward_json(json_path.read_text(encoding="utf-8", errors="replace"))
    if txt_path.is_file():
        return parse_reward_txt(txt_path.read_text(encoding="utf-8", errors="replace"))
    raise RewardError("the verifier wrote no /logs/verifier/reward.json or reward.txt")
