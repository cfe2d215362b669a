"""Effort levels -> the provider's reasoning settings, configurable per model.

An effort maps to keyword arguments for litellm.completion; `reasoning_effort` is litellm's
provider-neutral knob (it translates it to OpenAI's reasoning effort, Anthropic's thinking
budget, Gemini's thinking config...). Models are matched by glob on the litellm model string;
the first matching pattern wins, else the defaults apply.
"""

from __future__ import annotations

import fnmatch
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from qaflow.llm.config import LLMConfig
from qaflow.models.rollout import Effort

DEFAULT_EFFORTS: dict[Effort, dict[str, Any]] = {
    Effort.OFF: {},
    Effort.LOW: {"reasoning_effort": "low"},
    Effort.MEDIUM: {"reasoning_effort": "medium"},
    Effort.XHIGH: {"reasoning_effort": "high"},
}
"""`off` sends no reasoning setting (the provider's default); set `{"reasoning_effort": "none"}` or the
provider's own switch per model where off must mean no thinking at all."""


class EffortMap(BaseModel):
    model_config = ConfigDict(extra="forbid")

    defaults: dict[Effort, dict[str, Any]] = Field(default_factory=lambda: dict(DEFAULT_EFFORTS))
    per_model: dict[str, dict[Effort, dict[str, Any]]] = Field(
        default_factory=dict,
        description="Glob on the model string -> effort -> litellm kwargs, e.g. {'openai/gpt-5*': {'xhigh': "
        "{'reasoning_effort': 'xhigh'}}}. Efforts a pattern leaves out fall back to the defaults.",
    )

    def kwargs(self, model: str, effort: Effort) -> dict[str, Any]:
        for pattern, table in self.per_model.items():
            if fnmatch.fnmatchcase(model, pattern) and effort in table:
                return dict(table[effort])
        return dict(self.defaults.get(effort, {}))

    def apply(self, config: LLMConfig, effort: Effort) -> LLMConfig:
        """`config` with the effort's settings: `reasoning_effort` set (or cleared), the rest merged into extra."""
        kwargs = self.kwargs(config.model, effort)
        reasoning_effort = kwargs.pop("reasoning_effort", None)
        return config.model_copy(update={"reasoning_effort": reasoning_effort, "extra": {**config.extra, **kwargs}})
