"""The export guard: checks that a rollout row can become a training row, or says why not.

It does not judge quality (that is the filters' job); it only catches rows that would break a
chat template or a trainer: repaired text, a malformed session (the `structure_valid` filter rule's
own rules, so the two never disagree), unparseable tool definitions, oversized messages.
"""

from __future__ import annotations

import json
from typing import Any

import polars as pl

from curation.export.limits import DEFAULT_MAX_MESSAGE_CHARS
from curation.filter_structure import structure_problems
from curation.removal_reasons import RemovalReason


class Rejected(Exception):
    """A row cannot be exported; `reason` and `detail` go into the report."""

    def __init__(self, reason: RemovalReason, detail: str):
        self.reason = reason
        self.detail = detail
        super().__init__(f"{reason.value}: {detail}")


def message_chars(message: dict[str, Any]) -> int:
    size = len(message.get("content") or "") + len(message.get("reasoning_content") or "")
    for call in message.get("tool_calls") or []:
        size += len((call.get("function") or {}).get("arguments") or "")
    return size


def check_sizes(messages: list[dict[str, Any]], max_message_chars: int) -> None:
    for i, message in enumerate(messages):
        size = message_chars(message)
        if size > max_message_chars:
            raise Rejected(
                RemovalReason.MESSAGE_TOO_LARGE,
                f"message {i} ({message.get('role')}) has {size} characters, over the cap of {max_message_chars}",
            )


def parse_tools(tools_json: str | None) -> list[dict[str, Any]]:
    """The tool definitions of a row: a list of OpenAI function definitions, each with a name."""
    try:
        tools = json.loads(tools_json or "[]")
    except (json.JSONDecodeError, RecursionError) as e:
        raise Rejected(RemovalReason.BAD_TOOLS, f"tool definitions are not JSON: {e}") from e
    if not isinstance(tools, list):
        raise Rejected(RemovalReason.BAD_TOOLS, f"tool definitions are a {type(tools).__name__}, not a list")
    for i, tool in enumerate(tools):
        function = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(function, dict) or not function.get("name"):
            raise Rejected(RemovalReason.BAD_TOOLS, f"tool definition {i} has no function name")
    return tools


def structure_faults(frame: pl.DataFrame) -> list[Rejected | None]:
    """Per row of a rollout frame, its first session-structure problem under the filter's rules
    (`curation.filter_structure`), or None."""
    problems = structure_problems(frame)
    return [
        None if kind is None else Rejected(RemovalReason(kind), reason)
        for kind, reason in zip(problems["kind"], problems["reason"], strict=True)
    ]


def guard_rollout(
    row: dict[str, Any], fault: Rejected | None, *, max_message_chars: int = DEFAULT_MAX_MESSAGE_CHARS
) -> list[dict[str, Any]]:
    """The tool definitions of a rollout-frame row that can be exported; raises Rejected otherwise.
    `fault`: the row's structural problem from `structure_faults`."""
    if row.get("text_repaired"):
        raise Rejected(RemovalReason.TEXT_REPAIRED, "non-UTF-8 text was replaced by U+FFFD when the rollout was stored")
    check_sizes(row.get("messages") or [], max_message_chars)
    tools = parse_tools(row.get("tools_json"))
    if fault is not None:
        raise fault
    return tools
