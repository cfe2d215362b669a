"""Effort levels -> the provider's reasoning settings, configurable per model.

An effort maps to keyword arguments for litellm.completion; `reasoning_effort` is litellm's
provider-neutral knob (it translates it to OpenAI's reasoning effort, Anthropic's thinking
budget, Gemini's thinking config...). Models are matched by glob on the litellm model string;
the first matching pattern wins, else the defaults apply.

`check_efforts` is the up-front check: before any attempt runs, every effort whose settings send an
OpenAI parameter litellm will not pass to the model's provider (`reasoning_effort`, `thinking`, the
per-attempt `seed`, any key of litellm's chat-completion parameter list) is named in one `LLMError`,
instead of each attempt ending in `llm_error`. Provider-specific keys (anything litellm does not know as
an OpenAI parameter) are passed through by litellm and are not checked here. `qaflow rollout` runs it
through `run_rollouts`.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from qaflow.errors import LLMError
from qaflow.llm.client import check_model
from qaflow.llm.config import LLMConfig
from qaflow.models.rollout import REPLAY_MODEL, Effort

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


CHECKED_PARAMS = ("reasoning_effort", "seed")
"""OpenAI parameters an effort or a sampling seed may send that some providers refuse; with `known_params`,
every other key of litellm's parameter list an effort sends (e.g. `thinking`) is checked too."""


def known_params() -> frozenset[str]:
    """The parameters litellm maps per provider (and refuses where unsupported): its chat-completion defaults."""
    try:
        from litellm.constants import DEFAULT_CHAT_COMPLETION_PARAM_VALUES
    except ImportError:  # an older litellm: the two known to matter
        return frozenset(CHECKED_PARAMS)
    return frozenset(DEFAULT_CHAT_COMPLETION_PARAM_VALUES) | frozenset(CHECKED_PARAMS)


def supported_params(model: str) -> set[str] | None:
    """The OpenAI parameters litellm passes to `model`'s provider; None when litellm cannot tell."""
    from qaflow.llm.client import import_litellm

    litellm = import_litellm()
    try:
        params = litellm.get_supported_openai_params(model=model)
    except Exception:  # litellm raises bare Exception/BadRequestError for a provider it cannot resolve
        return None
    return None if params is None else set(params)


def check_efforts(config: LLMConfig, efforts: Iterable[Effort], efforts_map: EffortMap, *, seed: bool = False) -> None:
    """Fail before any attempt when the provider cannot take an effort's settings (see the module docstring).

    `seed`: the harness will send a per-attempt `seed` too. Scripted configs are not checked (no provider).

    Raises:
        LLMError: naming every effort (and the parameter) the provider would refuse, and the fix.
    """
    if config.script is not None or config.model == REPLAY_MODEL:
        return
    check_model(config)
    supported = supported_params(config.model)
    if supported is None:
        return
    allowed = supported | set(config.extra.get("allowed_openai_params") or [])
    known = known_params()
    problems = []
    for effort in efforts:
        applied = efforts_map.apply(config, Effort(effort))
        sent = {"reasoning_effort": applied.reasoning_effort, **applied.extra}
        if seed:
            sent.setdefault("seed", 0)
        checked = [*CHECKED_PARAMS, *(k for k in efforts_map.kwargs(config.model, Effort(effort)) if k in known)]
        refused = [k for k in dict.fromkeys(checked) if sent.get(k) is not None and k not in allowed]
        if refused:
            problems.append(f"{Effort(effort).value} sends {', '.join(refused)}")
    if problems:
        raise LLMError(
            config.model,
            "the provider does not accept "
            + "; ".join(problems)
            + ": map these efforts to settings it honours in harness.efforts.per_model (or drop the sampling "
            "seed), or list the parameter in the model's extra.allowed_openai_params if it does honour it",
        )
