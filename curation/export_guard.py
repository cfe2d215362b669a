"""The export guard: checks that a rollout row can become a training row, or says why not.

It does not judge quality (that is the filters' job); it only catches rows that would break a
chat template or a trainer: repaired text, malformed tool-call structure, unparseable tool
definitions, oversized messages.
"""

from __future__ import annotations

import json
from typing import Any

from curation.export_common import RemovalReason
from curation.export_limits import DEFAULT_MAX_MESSAGE_CHARS

ROLES = frozenset({"system", "user", "assistant", "tool"})


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


def _check_call(call: dict[str, Any], where: str, pending: set[str]) -> str:
    function = call.get("function") or {}
    name, call_id = function.get("name"), call.get("id")
    if not name:
        raise Rejected(RemovalReason.BAD_TOOL_CALL, f"{where} has no function name")
    if not call_id:
        raise Rejected(RemovalReason.BAD_TOOL_CALL, f"{where} ({name}) has no id")
    if call_id in pending:
        raise Rejected(RemovalReason.BAD_TOOL_CALL, f"{where} ({name}) repeats the id {call_id!r}")
    try:
        arguments = json.loads(function.get("arguments") or "")
    except (json.JSONDecodeError, RecursionError) as e:
        raise Rejected(RemovalReason.BAD_TOOL_CALL, f"{where} ({name}) arguments are not JSON: {e}") from e
    if not isinstance(arguments, dict):
        raise Rejected(RemovalReason.BAD_TOOL_CALL, f"{where} ({name}) arguments are not a JSON object")
    return str(call_id)


def check_structure(messages: list[dict[str, Any]]) -> None:
    """Roles are known, a user message comes before the first assistant turn, every tool result answers an
    open call of the assistant turn before it, and no turn starts while calls are unanswered (calls left
    open by the very last turn are allowed: a run may stop there)."""
    pending: set[str] = set()
    seen_user = seen_assistant = False
    for i, message in enumerate(messages):
        role = message.get("role")
        if role not in ROLES:
            raise Rejected(RemovalReason.BAD_ROLE, f"message {i} has role {role!r}")
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in pending:
                raise Rejected(
                    RemovalReason.ORPHAN_TOOL_RESULT,
                    f"message {i} answers tool call {call_id!r}, which no assistant turn before it left open",
                )
            pending.discard(call_id)
            continue
        if pending:
            raise Rejected(
                RemovalReason.UNANSWERED_TOOL_CALL,
                f"message {i} ({role}) comes before the results of tool calls {sorted(pending)}",
            )
        if role == "user":
            seen_user = True
        elif role == "assistant":
            if not seen_user:
                raise Rejected(RemovalReason.BAD_ORDER, f"message {i} is an assistant turn before any user message")
            seen_assistant = True
            for j, call in enumerate(message.get("tool_calls") or []):
                pending.add(_check_call(call, f"message {i} tool call {j}", pending))
    if not seen_assistant:
        raise Rejected(RemovalReason.NO_ASSISTANT_TURN, "the trajectory has no assistant turn")


def guard_rollout(row: dict[str, Any], *, max_message_chars: int = DEFAULT_MAX_MESSAGE_CHARS) -> list[dict[str, Any]]:
    """The tool definitions of a rollout-frame row that can be exported; raises Rejected otherwise."""
    if row.get("text_repaired"):
        raise Rejected(RemovalReason.TEXT_REPAIRED, "non-UTF-8 text was replaced by U+FFFD when the rollout was stored")
    messages = row.get("messages") or []
    if not messages:
        raise Rejected(RemovalReason.NO_MESSAGES, "the trajectory has no messages")
    check_sizes(messages, max_message_chars)
    check_structure(messages)
    return parse_tools(row.get("tools_json"))
