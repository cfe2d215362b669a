"""The effort-ordered reward.

Failure is 0, however short. A success with no reference length scores 1 (correctness only). A
success with a reference scores `0.5 + 0.5 * phi(over)`, `over = max(0, thinking / reference - 1)`:
thinking up to the reference costs nothing (no bonus below it), thinking beyond it costs smoothly,
and any success (>= 0.5) beats any failure (0). phi(0) = 1 and phi decreases:

- `exp` (default): phi(x) = exp(-k x); at twice the reference (x = 1, k = 1) a success scores 0.684.
- `reciprocal`: phi(x) = 1 / (1 + k x).
- `linear`: phi(x) = max(0, 1 - k x).

A reference is never below `floor` thinking tokens (DEFAULT_FLOOR, 256).
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

DEFAULT_FLOOR = 256.0
"""The default reference floor in thinking tokens: the low effort's thinking budget (`sft.local_llm.DEFAULT_BUDGETS`).
A real model thinks tens to hundreds of tokens on the easiest turn; a reference of a few dozen (a median of
short successes) would penalise ordinary thinking, so a reference is never below the lowest effort's budget."""


class RewardConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    phi: Literal["exp", "reciprocal", "linear"] = Field(
        "exp", description="Penalty family for thinking over the reference."
    )
    k: float = Field(1.0, gt=0, description="Steepness of phi.")
    min_successes: int = Field(2, ge=1, description="Successes at a higher effort needed before it gives a reference.")
    floor: float = Field(
        DEFAULT_FLOOR,
        ge=0,
        description="A reference is never below this many thinking tokens (default 256: the local policy's low "
        "budget, so thinking within the lowest effort's budget is never penalised).",
    )


def phi(over: float, config: RewardConfig) -> float:
    x = max(0.0, over)
    if config.phi == "exp":
        return math.exp(-config.k * x)
    if config.phi == "reciprocal":
        return 1.0 / (1.0 + config.k * x)
    return max(0.0, 1.0 - config.k * x)


def effort_reward(success: bool, thinking_tokens: int, reference: float | None, config: RewardConfig) -> float:
    """The reward of one attempt (see the module docstring)."""
    if not success:
        return 0.0
    if reference is None or reference <= 0:
        return 1.0
    over = max(0.0, thinking_tokens / reference - 1.0)
    return 0.5 + 0.5 * phi(over, config)
