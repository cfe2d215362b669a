"""Rewards and advantages of a collection round.

Group = (task version, round, policy, effort). Default advantage: `A = r - mean(group)`, no division
by the standard deviation, so small reward differences stay small (two successes at 1.00 and 0.98
get +0.01 and -0.01, not +1 and -1). Options for comparison: `std` ((r - mean) / (std + eps),
GRPO's original) and `rloo` (r minus the mean of the *other* members). A group with equal rewards
gets 0 everywhere; a group of one gets 0.
"""

from __future__ import annotations

from typing import Literal

import polars as pl

from rl.graded import success_expr
from rl.reference import GROUP, reference_table
from rl.reward import RewardConfig, effort_reward

AdvantageMode = Literal["mean", "std", "rloo"]
EPS = 1e-6


def score(frame: pl.DataFrame, config: RewardConfig) -> pl.DataFrame:
    """`frame` with `success`, `reference`, `reference_effort` and `rl_reward` columns."""
    refs = reference_table(frame, config)
    scored = frame.with_columns(success_expr().alias("success")).join(refs, on=[*GROUP, "effort"], how="left")
    rewards = [
        effort_reward(s, int(t), r, config)
        for s, t, r in zip(scored["success"], scored["thinking_tokens"], scored["reference"], strict=True)
    ]
    return scored.with_columns(pl.Series("rl_reward", rewards, dtype=pl.Float64))


def advantages(scored: pl.DataFrame, mode: AdvantageMode = "mean") -> pl.DataFrame:
    """`scored` with an `advantage` column (see the module docstring)."""
    keys = [*GROUP, "effort"]
    r = pl.col("rl_reward")
    n = pl.len().over(keys)
    mean = r.mean().over(keys)
    if mode == "mean":
        adv = r - mean
    elif mode == "std":
        adv = (r - mean) / (r.std(ddof=0).over(keys) + EPS)
    elif mode == "rloo":
        adv = pl.when(n > 1).then(r - (r.sum().over(keys) - r) / (n - 1)).otherwise(0.0)
    else:
        raise ValueError(f"unknown advantage mode {mode!r}: mean, std or rloo")
    equal = r.max().over(keys) == r.min().over(keys)
    return scored.with_columns(pl.when(equal).then(0.0).otherwise(adv).alias("advantage"))
