"""The rewards of a multi-step trial: the `min_reward` gate of a step and the trial's roll-up.

Harbor's rules (docs, "Multi-step tasks"): a float `min_reward` gates on the "reward" key (here, as
for reward.txt, a reward with one key counts as that key); a mapping gates on each of its keys; a
missing key is -inf. The trial reward is the per-key mean over the steps that produced a reward
(`mean`, missing keys count 0) or the last step that ran (`final`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from qaflow.models.trial import StepResult
from qaflow.reward import Reward
from qaflow.task import MultiStepRewardStrategy


def min_reward_failure(rewards: dict[str, float] | None, min_reward: float | dict[str, float] | None) -> str | None:
    """Why `rewards` misses `min_reward` ("reward=0 below min_reward 1"), or None when it meets it."""
    if min_reward is None:
        return None
    values = rewards or {}
    if isinstance(min_reward, dict):
        thresholds = min_reward
    else:
        thresholds = {"reward": float(min_reward)}
        if "reward" not in values and len(values) == 1:
            values = {"reward": next(iter(values.values()))}
    for key, threshold in thresholds.items():
        actual = values.get(key, -math.inf)
        if actual < threshold:
            return f"{key}={actual:g} below min_reward {threshold:g}"
    return None


def roll_up(steps: Sequence[StepResult], strategy: MultiStepRewardStrategy | None) -> Reward | None:
    """The trial's reward from the steps that ran, by `strategy` (default mean); None when no step gave one."""
    if not steps:
        return None
    if strategy is MultiStepRewardStrategy.FINAL:
        last = steps[-1]
        if last.rewards is None:
            return None
        value = last.reward if last.reward is not None else _scalar(last.rewards)
        return Reward(value=value, values=dict(last.rewards), source=last.reward_source or "steps")
    rewarded = [s for s in steps if s.rewards is not None]
    if not rewarded:
        return None
    keys = sorted({k for s in rewarded for k in s.rewards or {}})
    values = {k: math.fsum((s.rewards or {}).get(k, 0.0) for s in rewarded) / len(rewarded) for k in keys}
    sources = {s.reward_source for s in rewarded if s.reward_source}
    source = sources.pop() if len(sources) == 1 else "steps"
    return Reward(value=_scalar(values), values=values, source=source)


def _scalar(values: dict[str, float]) -> float:
    """As reward.json is read: the "reward" key, else the mean of the values."""
    if "reward" in values:
        return values["reward"]
    return math.fsum(values.values()) / len(values) if values else 0.0
