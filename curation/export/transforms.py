"""Template-safe shapes for exported SFT sessions: named transforms that `qaflow export sft` applies when asked.

Some chat templates refuse, or silently drop, a shape the agent harness (or Harbor) records. Each transform
rewrites a session's messages (rows as `curation.export.common.message_row` builds them) or its tool definitions
into a shape those templates render, keeping every call, its id, its arguments and its result, in order:

- `split-parallel-calls`: an assistant turn with N tool calls becomes N consecutive assistant turns of one call
  each, each followed by its own tool result (matched by `tool_call_id`). The turn's text and reasoning stay on
  the first of them. Llama 3.1/3.2 refuse a second call in a turn ("only supports single tool-calls at once");
  GPT-OSS renders only the first call and drops the rest without a word.
- `separate-thinking`: an assistant turn with text (content) and tool calls becomes two turns: the text with the
  turn's reasoning, then the calls alone (empty content, no reasoning). GPT-OSS refuses content and thinking
  together with tool calls ("Cannot pass both content and thinking ..."). A turn with reasoning and calls but no
  text is left as it is (every template takes it). Under GPT-OSS the text turn renders as a `final` message and its
  reasoning is dropped, as that template drops the reasoning of every turn before the last.
- `describe-tools`: a tool definition without a `description` gets one made from its name and schema
  (`Bash tool. Arguments: command (string).`); nothing else changes. Harbor writes its tools so (ATIF tools derived
  from the calls carry a name and parameters only), and GPT-OSS's and Muse Glimmer's templates read every tool's
  description ("'dict object' has no attribute 'description'", "Object of type Undefined is not JSON
  serializable").

The transforms run in one fixed order (`TRANSFORMS`), whatever order they were asked in. `for_template` names
the transforms a TRL-bundled chat template needs, from three tables measured in `tests/test_chat_templates.py`:
`FOR_TEMPLATE` (needs transforms), `AS_IS` (renders the export as it is) and `UNFIXABLE` (no transform helps).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, Field

Message = dict[str, Any]
Tool = dict[str, Any]


class TransformName(StrEnum):
    SPLIT_PARALLEL_CALLS = "split-parallel-calls"
    SEPARATE_THINKING = "separate-thinking"
    DESCRIBE_TOOLS = "describe-tools"


def _has_text(message: Message) -> bool:
    content = message.get("content")
    return isinstance(content, str) and bool(content.strip())


def _parallel(message: Message) -> bool:
    return message.get("role") == "assistant" and len(message.get("tool_calls") or []) > 1


def _text_with_calls(message: Message) -> bool:
    return message.get("role") == "assistant" and bool(message.get("tool_calls")) and _has_text(message)


def split_parallel_calls(messages: Sequence[Message]) -> list[Message]:
    """Each assistant turn with several tool calls as consecutive one-call turns, each followed by its result.

    The results are the tool messages right after the turn, matched by `tool_call_id`; one that matches no call
    stays after the last call's result, in its place among the others.
    """
    out: list[Message] = []
    i = 0
    while i < len(messages):
        message = messages[i]
        i += 1
        if not _parallel(message):
            out.append(dict(message))
            continue
        results: list[Message] = []
        while i < len(messages) and messages[i].get("role") == "tool":
            results.append(messages[i])
            i += 1
        by_id = {r.get("tool_call_id"): r for r in results}
        used: set[int] = set()
        for j, call in enumerate(message["tool_calls"]):
            turn = dict(message) if j == 0 else {**message, "content": "", "reasoning_content": None}
            out.append({**turn, "tool_calls": [call]})
            result = by_id.get(call.get("id"))
            if result is not None and id(result) not in used:
                used.add(id(result))
                out.append(dict(result))
        out.extend(dict(r) for r in results if id(r) not in used)
    return out


def separate_thinking(messages: Sequence[Message]) -> list[Message]:
    """Each assistant turn with text and tool calls as two turns: text and reasoning, then the calls alone."""
    out: list[Message] = []
    for message in messages:
        if _text_with_calls(message):
            out.append({**message, "tool_calls": None})
            out.append({**message, "content": "", "reasoning_content": None})
        else:
            out.append(dict(message))
    return out


def _function(tool: Tool) -> dict[str, Any]:
    """The function definition of an OpenAI tool (`{"type": "function", "function": {...}}`), or the tool itself."""
    function = tool.get("function")
    return function if isinstance(function, dict) else tool


def _undescribed(tool: Tool) -> bool:
    description = _function(tool).get("description")
    return not (isinstance(description, str) and description.strip())


def tool_description(function: dict[str, Any]) -> str:
    """What a tool's name and schema say: `Bash tool. Arguments: command (string), timeout (integer).`"""
    parameters = function.get("parameters")
    properties = parameters.get("properties") if isinstance(parameters, dict) else None
    arguments = [
        f"{key} ({spec['type']})" if isinstance(spec, dict) and isinstance(spec.get("type"), str) else str(key)
        for key, spec in (properties.items() if isinstance(properties, dict) else ())
    ]
    said = f"Arguments: {', '.join(arguments)}." if arguments else "No arguments."
    return f"{function.get('name') or 'unnamed'} tool. {said}"


def describe_tools(tools: Sequence[Tool]) -> list[Tool]:
    """Each tool without a description with one made from its name and schema (`tool_description`)."""
    out: list[Tool] = []
    for tool in tools:
        if not _undescribed(tool):
            out.append(dict(tool))
            continue
        function = _function(tool)
        described = {**function, "description": tool_description(function)}
        out.append({**tool, "function": described} if function is not tool else described)
    return out


def _never(_item: dict[str, Any]) -> bool:
    return False


def _same_messages(messages: Sequence[Message]) -> list[Message]:
    return [dict(m) for m in messages]


def _same_tools(tools: Sequence[Tool]) -> list[Tool]:
    return [dict(t) for t in tools]


@dataclass(frozen=True)
class Transform:
    name: TransformName
    applies: Callable[[Message], bool]
    """Whether the transform changes this message (counted on the card)."""
    apply: Callable[[Sequence[Message]], list[Message]]
    why: str
    """Why it exists, for the dataset card."""
    applies_to_tool: Callable[[Tool], bool] = _never
    """Whether the transform changes this tool definition (counted on the card)."""
    apply_tools: Callable[[Sequence[Tool]], list[Tool]] = _same_tools
    on_tools: bool = False
    """It rewrites tool definitions, not messages (its count is of tools)."""


TRANSFORMS = (
    Transform(
        TransformName.SEPARATE_THINKING,
        _text_with_calls,
        separate_thinking,
        "an assistant turn with text and tool calls becomes the text (with its reasoning) in one turn, then the "
        "calls alone in the next: GPT-OSS's template refuses content and thinking beside tool calls",
    ),
    Transform(
        TransformName.SPLIT_PARALLEL_CALLS,
        _parallel,
        split_parallel_calls,
        "an assistant turn with several tool calls becomes consecutive turns of one call each, each followed by "
        "its own result (order and ids kept): Llama 3.1/3.2's templates refuse a second call in a turn and "
        "GPT-OSS's renders only the first",
    ),
    Transform(
        TransformName.DESCRIBE_TOOLS,
        _never,
        _same_messages,
        "a tool definition without a description gets one made from its name and schema (`Bash tool. Arguments: "
        "command (string).`): GPT-OSS's and Muse Glimmer's templates read every tool's description, and Harbor's "
        "tools derived from the calls have none",
        applies_to_tool=_undescribed,
        apply_tools=describe_tools,
        on_tools=True,
    ),
)
"""Every transform, in the order they run."""

FOR_TEMPLATE: dict[str, tuple[TransformName, ...]] = {
    "gptoss": (TransformName.SEPARATE_THINKING, TransformName.SPLIT_PARALLEL_CALLS, TransformName.DESCRIBE_TOOLS),
    "muse_glimmer": (TransformName.DESCRIBE_TOOLS,),
    "llama3_1": (TransformName.SPLIT_PARALLEL_CALLS,),
    "llama3_2": (TransformName.SPLIT_PARALLEL_CALLS,),
}
"""Template family (a TRL `chat_templates/*.jinja` name without `.jinja` and `_training`) -> the transforms its
templates need."""

AS_IS = frozenset(
    {
        "deepseekv3",  # deepseekv3_training only: see UNFIXABLE
        "diffusion_gemma",
        "gemma4",
        "gemma4_v2",
        "gemma4_v3",
        "gemma4_v4",
        "gemma4_v5",
        "glm4moe",
        "lfm2_2_5",
        "lfm2_2_5_v2",
        "lfm2_2_5_vl",
        "lfm2_v2",
        "nemotron_3_5_lightning",
        "nemotron_3_nano",
        "nemotron_3_super",
        "nemotron_3_ultra",
        "qwen2_5",
        "qwen3",
        "qwen3_5_nothink",
        "qwen3_5_think",
        "qwen3_6",
        "qwen3_8",
        "qwen3_instruct_2507",
        "qwen3_vl",
    }
)
"""Template families that know tool calls and render every exported shape right with no transform (tools without
descriptions, as Harbor writes them, included)."""

UNFIXABLE = {
    "deepseekv3": "its inference template concatenates `arguments` as a string; TRL's deepseekv3_training takes "
    "the export's objects as they are",
    "deepseek_r1_distill": "it renders tool calls only when content is null and concatenates `arguments` as a "
    "string; TRL's chat_templates README says it does not support tool calling",
    "deepseek_r1_distill_training": "as deepseek_r1_distill (the training variant adds only generation markers)",
}
"""Templates (file names without `.jinja`) that know tool calls but render them wrong in a way no transform of
the messages fixes, and why."""


def template_family(template: str) -> str:
    """`gptoss_training.jinja` -> `gptoss`."""
    return template.removesuffix(".jinja").removesuffix("_training")


def for_template(template: str) -> tuple[TransformName, ...]:
    """The transforms a TRL-bundled template needs (empty: it renders the export as it is).

    Raises:
        ValueError: no transform makes the template render the export right (the message says why), or the
            template is none this module has measured (the message lists them).
    """
    stem = template.removesuffix(".jinja")
    if stem in UNFIXABLE:
        raise ValueError(f"{stem}: no transform helps: {UNFIXABLE[stem]}")
    family = template_family(stem)
    if family in FOR_TEMPLATE:
        return FOR_TEMPLATE[family]
    if family in AS_IS:
        return ()
    known = sorted({*FOR_TEMPLATE, *AS_IS})
    raise ValueError(f"{stem}: not a TRL-bundled template with tool calls (known: {', '.join(known)})")


class AppliedTransform(BaseModel):
    """One transform an export ran: what it does and why, and how many assistant turns it changed."""

    name: TransformName
    why: str
    turns_changed: int = Field(0, description="Assistant turns it rewrote, over all exported rows.")
    tools_changed: int = Field(0, description="Tool definitions it rewrote, over all exported rows.")


def transforms_named(names: Sequence[str]) -> tuple[Transform, ...]:
    """The transforms of `names`, in the order they run.

    Raises:
        ValueError: a name is no transform (the message lists them).
    """
    known = {t.name.value: t for t in TRANSFORMS}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ValueError(f"unknown transform {', '.join(unknown)} (known: {', '.join(known)})")
    return tuple(t for t in TRANSFORMS if t.name.value in set(names))


def chosen_transforms(names: Sequence[str], template: str | None) -> tuple[Transform, ...]:
    """The transforms of `names` and those `template` needs (`for_template`), in the order they run.

    Raises:
        ValueError: an unknown name, or a template `for_template` refuses.
    """
    return transforms_named([*names, *(for_template(template) if template else ())])


def apply_transforms(
    messages: Sequence[Message], transforms: Sequence[Transform], counts: dict[TransformName, int] | None = None
) -> list[Message]:
    """`messages` through each transform in turn; `counts` (when given) adds the turns each one changed."""
    out = [dict(m) for m in messages]
    for transform in transforms:
        if counts is not None:
            counts[transform.name] = counts.get(transform.name, 0) + sum(map(transform.applies, out))
        out = transform.apply(out)
    return out


def apply_tool_transforms(
    tools: Sequence[Tool], transforms: Sequence[Transform], counts: dict[TransformName, int] | None = None
) -> list[Tool]:
    """`tools` (one row's definitions) through each transform in turn; `counts` adds the tools each one changed."""
    out = [dict(t) for t in tools]
    for transform in transforms:
        if counts is not None:
            counts[transform.name] = counts.get(transform.name, 0) + sum(map(transform.applies_to_tool, out))
        out = transform.apply_tools(out)
    return out
