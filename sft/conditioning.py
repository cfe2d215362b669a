"""Effort as input: what a local policy is conditioned on at each effort, the same in collection
(`sft.local_llm`), in SFT rows (`sft.train`) and in the RL update (`rl.update`).

One rule, decided from the source of the policy's chat template:

| the template has | off | low / medium / xhigh |
|---|---|---|
| `reasoning_effort` (GPT-OSS) | `reasoning_effort="low"` + line | `reasoning_effort` = low / medium / high |
| `enable_thinking` (Qwen3) | `enable_thinking=False` | `enable_thinking=True` + line |
| neither | line | line |

where "line" is the system line `Reasoning effort: <effort>.` (`Reasoning effort: off.`, `... low.`, ...).

Qwen3's switch is on/off only, so the graded efforts also get the system line; GPT-OSS has no "off", so
off is its lowest setting plus the line. The system line is prepended to the system message (or is the
system message when the session has none): `Reasoning effort: low.` + a blank line + the system prompt.
Stored sessions never contain it: it is added when a session is rendered, from its effort. The thinking
budget (`sft.local_llm`) stays the hard cap on what the policy may think.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from qaflow.models.rollout import Effort

SYSTEM_LINE = "Reasoning effort: {effort}."
"""The documented system line for efforts a template cannot express by itself."""

Switch = Literal["reasoning_effort", "enable_thinking"]
_SWITCHES: tuple[Switch, ...] = ("reasoning_effort", "enable_thinking")
_GPT_OSS_EFFORT = {Effort.OFF: "low", Effort.LOW: "low", Effort.MEDIUM: "medium", Effort.XHIGH: "high"}


class Conditioning(BaseModel):
    """What the policy receives at one effort: chat-template variables and/or a system line."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    template_kwargs: dict[str, Any] = Field(
        default_factory=dict, description="Variables passed to the chat template (its own effort or thinking switch)."
    )
    system_line: str | None = Field(None, description="Line prepended to the system message; None: none.")

    def key(self) -> str:
        return self.model_dump_json()


def template_switch(template: str | None) -> Switch | None:
    """The chat template's own effort or thinking switch: the first of `reasoning_effort`, `enable_thinking`
    that its source uses as a variable, else None."""
    for name in _SWITCHES:
        if template and re.search(rf"\b{name}\b", template):
            return name
    return None


def effort_conditioning(
    template: str | None, effort: Effort | str | None, *, thinking: bool | None = None
) -> Conditioning:
    """The conditioning of `effort` under `template` (the rule in the module docstring). `thinking`: whether the
    turn may think (default: every effort but off); it sets Qwen3's `enable_thinking`. No effort: nothing."""
    if effort is None:
        return Conditioning()
    effort = Effort(effort)
    thinking = effort != Effort.OFF if thinking is None else thinking
    line = SYSTEM_LINE.format(effort=effort.value)
    switch = template_switch(template)
    if switch == "reasoning_effort":
        return Conditioning(
            template_kwargs={"reasoning_effort": _GPT_OSS_EFFORT[effort]},
            system_line=line if effort == Effort.OFF else None,
        )
    if switch == "enable_thinking":
        return Conditioning(
            template_kwargs={"enable_thinking": thinking}, system_line=None if effort == Effort.OFF else line
        )
    return Conditioning(system_line=line)


def own_template(tokenizer: Any, fallback: str | None = None) -> str | None:
    """The policy's own chat template (what collection renders with), else `fallback`: the switch is detected there."""
    own = getattr(tokenizer, "chat_template", None)
    if isinstance(own, dict):
        own = own.get("default")
    return own or fallback


def condition_messages(
    messages: Sequence[Mapping[str, Any]], conditioning: Conditioning | None
) -> list[dict[str, Any]]:
    """`messages` with the conditioning's system line: prepended to the first system message, or a new one."""
    out = [dict(m) for m in messages]
    if conditioning is None or conditioning.system_line is None:
        return out
    line = conditioning.system_line
    if out and out[0].get("role") == "system":
        content = out[0].get("content")
        if isinstance(content, list) and content:
            out[0]["content"] = [{"type": "text", "text": f"{line}\n\n"}, *content]
        else:
            out[0]["content"] = f"{line}\n\n{content}" if isinstance(content, str) and content else line
        return out
    return [{"role": "system", "content": line}, *out]


def render_prompt(
    tokenizer: Any,
    messages: Sequence[Mapping[str, Any]],
    effort: Effort | str | None,
    *,
    tools: Any = None,
    thinking: bool | None = None,
    add_generation_prompt: bool = True,
) -> str:
    """The text the policy is prompted with for `messages` at `effort`: its own chat template under the effort's
    conditioning, with the generation prompt (unless `add_generation_prompt` is false). `thinking` as in
    `effort_conditioning` (it also goes to the template as `enable_thinking`, which templates without the switch
    ignore). The one rendering of collection (`sft.local_llm`, `sft.token_context`) and of the GRPO path
    (`rl.grpo`)."""
    conditioning = effort_conditioning(own_template(tokenizer), effort, thinking=thinking)
    if thinking is None:
        thinking = effort is not None and Effort(effort) != Effort.OFF
    template_kwargs = {"enable_thinking": thinking, **conditioning.template_kwargs}
    return str(
        tokenizer.apply_chat_template(
            condition_messages(messages, conditioning),
            tools=tools,
            add_generation_prompt=add_generation_prompt,
            tokenize=False,
            **template_kwargs,
        )
    )
