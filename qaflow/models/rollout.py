"""The rollout record (docs/contracts.md, "Trajectories and datasets"): one attempt of one agent at one task.

This is the boundary type every later stage reads: filters, exporters, SFT and RL. Messages are
OpenAI chat dicts (system, user, assistant with optional `reasoning_content` and `tool_calls`,
tool with `tool_call_id`); their content is always a string or None here (list-of-parts content is
joined by `normalize_message`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from qaflow.models.records import utcnow
from qaflow.models.trial import ExitStatus

Int64 = Annotated[int, Field(ge=-(2**63), le=2**63 - 1)]
"""An int the rollout frame (Int64 columns) can hold; a larger one is a validation error, not a crash later."""

MAX_NESTING = 200
"""Deepest nesting of lists and mappings in a record's messages, tools or meta: deeper JSON cannot be
written or read back reliably (Python's json recursion limit), so such a record is refused."""


class Effort(StrEnum):
    """Reasoning effort levels, in increasing order."""

    OFF = "off"
    LOW = "low"
    MEDIUM = "medium"
    XHIGH = "xhigh"

    @property
    def rank(self) -> int:
        return list(Effort).index(self)


EFFORT_RANK: dict[str, int] = {e.value: e.rank for e in Effort}
"""Effort name -> its rank (off 0 < low < medium < xhigh), for sorting and comparing string columns."""


class SideCallKind(StrEnum):
    SUBAGENT = "subagent"
    SUMMARISATION = "summarisation"


class TurnUsage(BaseModel):
    """Usage of one assistant turn (one model call)."""

    model_config = ConfigDict(extra="ignore")

    prompt_tokens: Int64 = 0
    completion_tokens: Int64 = 0
    reasoning_tokens: Int64 = 0
    reasoning_source: str = Field(
        "none", description="Where reasoning_tokens came from: provider (usage), tokenizer (counted), none."
    )


class SideCall(BaseModel):
    """A model call that is not a turn of the main conversation: a subagent or a context summarisation."""

    kind: SideCallKind
    turn: Int64 = Field(description="Index of the assistant turn it happened in (0-based).")
    tokens: Int64 = 0


class RolloutRecord(BaseModel):
    """One attempt: the whole trajectory, its usage, reward and how it ended."""

    model_config = ConfigDict(extra="ignore")

    task: str
    task_version: str
    source: str = "local"
    model: str
    effort: Effort = Effort.OFF
    attempt: Int64 = 0
    round: Int64 = Field(0, description="Collection round (RL): references compare attempts of the same round.")
    agent: str = Field("qaflow", description="The harness or agent that produced it (qaflow, or an imported name).")
    messages: list[dict[str, Any]] = Field(default_factory=list)
    tools: list[dict[str, Any]] = Field(default_factory=list, description="OpenAI-style tool definitions offered.")
    usage: list[TurnUsage] = Field(default_factory=list, description="One entry per assistant turn.")
    thinking_tokens: Int64 = Field(0, description="Reasoning tokens over all turns.")
    turns: Int64 = Field(0, description="Number of assistant turns.")
    reward: float | None = None
    rewards: dict[str, float] | None = None
    full_reward: bool = False
    exit_status: ExitStatus = ExitStatus.OK
    stop_reason: str = Field(
        "", description="Why the agent stopped: done, max_turns, max_tokens, wall_time, llm_error, imported..."
    )
    error: str | None = None
    verifier_output: str = ""
    side_calls: list[SideCall] = Field(default_factory=list)
    timings: dict[str, float] = Field(default_factory=dict)
    backend: str = ""
    run_id: str = ""
    created_at: datetime = Field(default_factory=utcnow)
    meta: dict[str, Any] = Field(default_factory=dict, description="Free-form provenance (import paths, config).")

    @field_validator("created_at")
    @classmethod
    def _utc_representable(cls, value: datetime) -> datetime:
        """The frame stores created_at in UTC: a moment that UTC cannot express (year 1 at +05:00) is refused."""
        if value.tzinfo is not None:
            try:
                value.astimezone(UTC)
            except OverflowError as e:
                raise ValueError(f"created_at {value.isoformat()} is out of range in UTC") from e
        return value

    @model_validator(mode="after")
    def _json_shaped(self) -> RolloutRecord:
        for name in ("messages", "tools", "meta"):
            _check_json_shape(getattr(self, name), name)
        return self

    @property
    def rollout_id(self) -> str:
        return rollout_id(self.task_version, self.model, self.effort, self.attempt, self.round)

    @property
    def passed(self) -> bool:
        return self.exit_status is ExitStatus.OK and self.full_reward


def _check_json_shape(value: Any, where: str) -> None:
    """Raise ValueError when `value` nests deeper than MAX_NESTING or has a mapping key JSON cannot hold
    (iterative: a deep value must not overflow the stack here either)."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            if depth >= MAX_NESTING:
                raise ValueError(f"{where} nests deeper than {MAX_NESTING} levels")
            for key, inner in item.items():
                if not isinstance(key, str | int | float | bool | None):
                    raise ValueError(f"{where} has a mapping key of type {type(key).__name__}, not JSON")
                stack.append((inner, depth + 1))
        elif isinstance(item, list | tuple):
            if depth >= MAX_NESTING:
                raise ValueError(f"{where} nests deeper than {MAX_NESTING} levels")
            stack.extend((inner, depth + 1) for inner in item)


SCRIPTED_KEY = "scripted"
"""`meta[SCRIPTED_KEY] = True` marks a rollout whose replies came from a script, not a model."""
REPLAY_MODEL = "openai/replay-oracle"
"""The model string of the replay policy (`qaflow.rollouts.replay`), scripted by definition."""


def is_scripted(model: str | None, meta: Mapping[str, Any] | str | None) -> bool:
    """True for a rollout of a scripted policy: marked in its meta (a dict, or the frame's `meta_json`), or the
    replay policy's model string (records written before the mark existed)."""
    if model == REPLAY_MODEL:
        return True
    if isinstance(meta, str):
        try:
            meta = json.loads(meta)
        except (json.JSONDecodeError, RecursionError):
            return False
    return isinstance(meta, Mapping) and meta.get(SCRIPTED_KEY) is True


def rollout_id(task_version: str, model: str, effort: str, attempt: int, round: int = 0) -> str:
    """Stable id of a work item: the same (version, model, effort, attempt, round) is the same rollout."""
    key = f"{task_version}\x00{model}\x00{effort}\x00{attempt}\x00{round}"
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:20]


def message_text(content: Any) -> str | None:
    """OpenAI content (str, None, or a list of parts) as one string or None."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict):
                parts.append(str(part.get("text") or ""))
            else:
                parts.append(str(part))
        return "".join(parts)
    return str(content)


def normalize_message(message: dict[str, Any]) -> dict[str, Any]:
    """A copy of `message` with string content (parts joined) and only the keys the contract knows."""
    out: dict[str, Any] = {"role": str(message.get("role", "")), "content": message_text(message.get("content"))}
    for key in ("reasoning_content", "tool_call_id", "name"):
        if message.get(key) is not None:
            out[key] = str(message[key])
    calls = message.get("tool_calls")
    if calls:
        out["tool_calls"] = [_tool_call(call) for call in (calls if isinstance(calls, list | tuple) else [calls])]
    return out


def _tool_call(call: Any) -> dict[str, Any]:
    """A tool call as {id, type, function: {name, arguments}}. A call (or function) that is not a mapping
    keeps its value as the arguments text, without id or name, so that the filters and the export guard
    reject it with a reason instead of it crashing them or vanishing."""
    if not isinstance(call, dict):
        return {"id": "", "type": "function", "function": {"name": "", "arguments": _arguments_text(call)}}
    function = call.get("function")
    if not isinstance(function, dict):
        function = {"arguments": function}
    return {
        "id": str(call.get("id") or ""),
        "type": str(call.get("type") or "function"),
        "function": {"name": str(function.get("name") or ""), "arguments": _arguments_text(function.get("arguments"))},
    }


def _arguments_text(raw: Any) -> str:
    if isinstance(raw, str):
        return raw
    if raw is None:
        return ""
    return json.dumps(raw, default=str)


def arguments_object(arguments: Any) -> Any:
    """Tool-call arguments as an object: the OpenAI wire format's JSON string decoded (kept as is when it
    is not JSON), anything else as it is. Rollout records keep the string; exports and chat templates
    take the object."""
    if isinstance(arguments, str):
        try:
            return json.loads(arguments)
        except (json.JSONDecodeError, RecursionError):
            return arguments
    return arguments


class RolloutTally(BaseModel):
    """Attempts of one task version by one model at one effort and round, as `qaflow pool show` counts them."""

    task_version: str
    model: str
    effort: str
    round: int
    graded: int = Field(description="Attempts that are results (the verifier graded them).")
    passed: int = Field(description="Graded attempts with full reward that ended ok (`passed_expr`).")
    errors: int = Field(
        description="Attempts that ended in an infrastructure error or a failed model call: no result, "
        "counted apart; a rerun tries them again."
    )
