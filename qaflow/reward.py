"""Reading the verifier's reward: `reward.json` first, else `reward.txt`; never a silent default.

A missing, empty or non-numeric reward is a `RewardError`, recorded as such by the trial; so is a
value outside [0, 1] (`in_range`: the trial's check, so that 1e308 never counts as a full reward).
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
        raise RewardError(f"{where}: {_short(raw)} is not a number")
    try:
        value = float(raw)
    except OverflowError as e:  # an int beyond the float range
        raise RewardError(f"{where}: {_short(raw)} is not a finite number") from e
    except ValueError as e:
        raise RewardError(f"{where}: {_short(raw)} is not a number") from e
    if not math.isfinite(value):
        raise RewardError(f"{where}: {_short(raw)} is not a finite number")
    return value


def _short(raw: object, limit: int = 80) -> str:
    """repr of a value for an error message, cut short (a reward file may hold megabytes or deep nesting)."""
    if isinstance(raw, int) and not isinstance(raw, bool) and raw.bit_length() > 64:
        return f"an integer of about {int(raw.bit_length() * math.log10(2)) + 1} digits"
    if isinstance(raw, list | dict):
        return f"a JSON {'array' if isinstance(raw, list) else 'object'}"
    text = repr(raw)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _unique_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    """object_pairs_hook: a key given twice is an error, not a silent last-one-wins."""
    out: dict[str, object] = {}
    for key, value in pairs:
        if key in out:
            raise RewardError(f"reward.json gives the key {_short(key)} twice")
        out[key] = value
    return out


def parse_reward_json(text: str) -> Reward:
    if not text.strip():
        raise RewardError("reward.json is empty")
    try:
        data = json.loads(text, object_pairs_hook=_unique_keys)
    except RecursionError as e:
        raise RewardError("reward.json is not usable JSON: nested too deeply") from e
    except ValueError as e:  # JSONDecodeError, or an integer literal over Python's digit limit
        raise RewardError(f"reward.json is not valid JSON: {e}") from e
    if isinstance(data, int | float) and not isinstance(data, bool):
        values = {"reward": _number(data, "reward.json")}
    elif isinstance(data, dict) and data:
        values = {_name(k): _number(v, f"reward.json[{_short(k)}]") for k, v in data.items()}
    else:
        raise RewardError("reward.json must map names to numbers")
    if "reward" in values:
        value = values["reward"]
    else:
        value = sum(values.values()) / len(values)
        if not math.isfinite(value):  # the sum overflowed; every value is finite, so their mean is
            value = math.fsum(v / len(values) for v in values.values())
        if not math.isfinite(value):
            raise RewardError("reward.json: the mean of its values is not a finite number")
    return Reward(value=value, values=values, source="reward.json")


def _name(key: str) -> str:
    try:
        key.encode("utf-8")
    except UnicodeEncodeError as e:  # a lone surrogate from a \udcxx escape: not text, cannot be stored
        raise RewardError(f"reward.json: the key {_short(key)} is not valid Unicode text") from e
    return key


def in_range(reward: Reward) -> Reward:
    """`reward` when every value lies in [0, 1].

    Raises:
        RewardError: naming the file, the key and the value outside it.
    """
    for key, value in reward.values.items():
        if not 0.0 <= value <= FULL_REWARD:
            where = reward.source if reward.source == "reward.txt" else f"{reward.source}[{_short(key)}]"
            raise RewardError(f"{where}: {value!r} is outside [0, 1]")
    return reward


def parse_reward_txt(text: str) -> Reward:
    stripped = text.strip()
    if not stripped:
        raise RewardError("reward.txt is empty")
    value = _number(stripped, "reward.txt")
    return Reward(value=value, values={"reward": value}, source="reward.txt")


REWARD_FILES = ("reward.json", "reward.txt")
"""The files a verifier may write its reward to, in the order they are read."""


def reward_from_file(found: tuple[str, str] | None) -> Reward:
    """The reward in the first reward file found in /logs/verifier: (name, text), or None for none.

    Raises:
        RewardError: no file, or the one found is empty or not numeric.
    """
    if found is None:
        raise RewardError("the verifier wrote no /logs/verifier/reward.json or reward.txt")
    name, text = found
    return parse_reward_json(text) if name == "reward.json" else parse_reward_txt(text)


def read_reward(verifier_dir: Path) -> Reward:
    """Read the reward from a host copy of /logs/verifier.

    Raises:
        RewardError: when neither file exists, or the one found is empty or not numeric.
    """
    for name in REWARD_FILES:
        path = verifier_dir / name
        if path.is_file():
            return reward_from_file((name, path.read_text(encoding="utf-8", errors="replace")))
    return reward_from_file(None)
