"""Why a row was left out of an export: the reasons every filter and exporter names (a contract)."""

from __future__ import annotations

from enum import StrEnum


class RemovalReason(StrEnum):
    """Why an input row was left out of an export (a contract: these names stay)."""

    TEXT_REPAIRED = "text_repaired"
    """Non-UTF-8 text was replaced by U+FFFD when the rollout was stored."""
    NO_MESSAGES = "no_messages"
    BAD_ROLE = "bad_role"
    BAD_ORDER = "bad_order"
    """The first message after an optional system message is not a user message, or a late system message."""
    ORPHAN_TOOL_RESULT = "orphan_tool_result"
    """A tool message that answers no open call of the assistant turn before it (or answers one twice)."""
    UNANSWERED_TOOL_CALL = "unanswered_tool_call"
    """A tool call without a result: a new turn starts, or the session ends, before it."""
    UNFINISHED = "unfinished_session"
    """The session ends with a user or tool message, after an assistant turn: no final answer."""
    EMPTY_TURN = "empty_assistant_turn"
    """An assistant turn with no text, no reasoning and no tool call."""
    BAD_TOOL_CALL = "bad_tool_call"
    """A tool call without id or name, a duplicate id, arguments that are not a JSON object or lack a required
    key, a tool that is not offered, or tool calls on a message that is not an assistant turn."""
    NO_ASSISTANT_TURN = "no_assistant_turn"
    BAD_TOOLS = "bad_tools"
    """The tool definitions are not a JSON list of function definitions."""
    MESSAGE_TOO_LARGE = "message_too_large"
    REWARD_HACK = "reward_hack"
    """A rewarded attempt changed a trust edge of its verifier (`qaflow filter`'s `reward_hack` rule)."""
    NO_PROMPT = "no_prompt"
    """No rollout of the task has a usable prompt (RL)."""
    TASK_UNLOADABLE = "task_unloadable"
    MISSING_FOLDER = "missing_folder"
    CHANGED_SINCE_SCAN = "changed_since_scan"
    """The task folder no longer holds the version the ledger recorded; scan the pool again."""
    UNKNOWN_TASK_VERSION = "unknown_task_version"
    """The rollout's task version is not in the pool's ledger, so nothing says it was audited."""
    TASK_NOT_ACCEPTED = "task_not_accepted"
    """The task version's status is not `accepted` (its audit found errors, or it was never audited)."""
    NOT_GRADED = "not_graded"
    """The attempt ended in an error (sandbox, model, infrastructure) or without a verifier reward."""
    NOT_PASSED = "not_passed"
    """SFT: a graded attempt the verifier did not pass (no full reward, or it did not end ok: a timeout); the
    method trains only on passing sessions."""
    SCRIPTED = "scripted"
    """A scripted policy (a replay of the reference solution, a test script) produced it, not a model."""
    UNEXPORTABLE = "unexportable"
    """The row could not be converted for another reason; the detail keeps the error type and message."""
