"""ATIF (the Agent Trajectory Interchange Format: a Harbor trial's `agent/trajectory.json`) as OpenAI chat
messages, per-turn usage and side calls; `qaflow.importers.harbor_jobs` reads the trials that hold it.

ATIF to OpenAI chat messages (`atif_to_messages`):

- A `system` step before any other step is a system message; a later one is a user message (the
  model read it as injected context, and chat templates reject mid-conversation system turns).
- A `user` step is a user message.
- An `agent` step is one assistant message (`message` as content, `reasoning_content`, `tool_calls`
  with `arguments` JSON-encoded) and one `TurnUsage`: prompt and completion tokens from
  `metrics`; reasoning tokens from `metrics.extra` (`reasoning_tokens`, `reasoning_output_tokens`,
  `thoughts_tokens` or `completion_tokens_details.reasoning_tokens`) with source "provider", else
  0 with source "none". A step without metrics gets a zero usage entry, so usage stays per turn.
- After it, one tool message per tool call, in call order, whose content is the joined
  `observation.results` with that `source_call_id`. Results without a (known) `source_call_id` go
  to the calls left without a result, in order, the surplus joined onto the last such call; when
  every call has its result (or there are no calls) they become one user message. A call left
  without any result gets an empty tool message, so every call id is answered.
- Multimodal content parts are joined by newlines; an image part becomes `[image: <path>]`.
- A system step with `extra.context_management.type == "compaction"` is a context summarisation:
  its text is not inlined; each subagent trajectory it references is one summarisation `SideCall`
  (one with no tokens if it references none), and its observation content, the summary the agent
  continues from, becomes a user message.
- A subagent referenced from any other step (`observation.results[].subagent_trajectory_ref`) is a
  subagent `SideCall`; so is every run of steps marked `extra.is_sidechain` (Claude Code inlines
  its subagents that way), whose steps are not inlined.
- Side-call tokens (prompt + completion) come from the referenced trajectory, found in the root's
  `subagent_trajectories` by `trajectory_id` or as a file next to the trajectory by
  `trajectory_path`; an unresolved reference counts 0 tokens and is listed in the meta.
- Steps with `is_copied_context` repeat earlier context: agent ones are dropped; user and system
  ones are kept only when the same text was not already emitted.

Tool definitions (`atif_tools`): `agent.tool_definitions` when present, else one minimal
definition per function name used, with the argument names seen and JSON types of their first value.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from qaflow.errors import QaflowError
from qaflow.models.rollout import SideCall, SideCallKind, TurnUsage

REASONING_KEYS = ("reasoning_tokens", "reasoning_output_tokens", "thoughts_tokens")


class AtifError(QaflowError, ValueError):
    """A trajectory is not ATIF (wrong shape, unknown schema version or step source)."""


# --- ATIF -> OpenAI messages -----------------------------------------------------------------------


def _text(content: Any) -> str | None:
    """ATIF content (a string, a list of content parts, or None) as one string or None."""
    if content is None or isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for part in content:
            if isinstance(part, dict) and part.get("type") == "image":
                source = part.get("source") or {}
                parts.append(f"[image: {source.get('path', '') if isinstance(source, dict) else source}]")
            elif isinstance(part, dict):
                parts.append(str(part.get("text") or ""))
            else:
                parts.append(str(part))
        return "\n".join(parts)
    return json.dumps(content, ensure_ascii=False)


def _int(value: Any) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0


def _dict(value: Any) -> dict[str, Any]:
    """`value` when it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    """`value` when it is a JSON array, else an empty one."""
    return value if isinstance(value, list) else []


def _turn_usage(metrics: Any) -> TurnUsage:
    if not isinstance(metrics, dict):
        return TurnUsage()
    extra = _dict(metrics.get("extra"))
    reasoning: Any = next((extra[k] for k in REASONING_KEYS if isinstance(extra.get(k), int)), None)
    details = extra.get("completion_tokens_details")
    if reasoning is None and isinstance(details, dict) and isinstance(details.get("reasoning_tokens"), int):
        reasoning = details["reasoning_tokens"]
    return TurnUsage(
        prompt_tokens=_int(metrics.get("prompt_tokens")),
        completion_tokens=_int(metrics.get("completion_tokens")),
        reasoning_tokens=_int(reasoning),
        reasoning_source="provider" if reasoning is not None else "none",
    )


def _step_tokens(step: dict[str, Any]) -> int:
    usage = _turn_usage(step.get("metrics"))
    return usage.prompt_tokens + usage.completion_tokens


def trajectory_tokens(trajectory: dict[str, Any]) -> int:
    """Prompt + completion tokens of a trajectory: its step metrics, else its final metrics."""
    steps = _list(trajectory.get("steps"))
    total = sum(_step_tokens(s) for s in steps if isinstance(s, dict) and not s.get("is_copied_context"))
    final = trajectory.get("final_metrics")
    if total == 0 and isinstance(final, dict):
        total = _int(final.get("total_prompt_tokens")) + _int(final.get("total_completion_tokens"))
    return total


def _check_trajectory(trajectory: Any) -> list[Any]:
    if not isinstance(trajectory, dict):
        raise AtifError(f"a trajectory is a JSON object, not {type(trajectory).__name__}")
    version = trajectory.get("schema_version")
    if version is not None and not (isinstance(version, str) and version.startswith("ATIF-v1.")):
        raise AtifError(f"unsupported schema_version {version!r} (expected ATIF-v1.x)")
    steps = trajectory.get("steps")
    if not isinstance(steps, list):
        raise AtifError("no steps list")
    return steps


class _Converter:
    def __init__(self, trajectory: dict[str, Any], base_dir: Path | None):
        self.base_dir = base_dir
        self.embedded = {
            t["trajectory_id"]: t
            for t in trajectory.get("subagent_trajectories") or []
            if isinstance(t, dict) and isinstance(t.get("trajectory_id"), str)
        }
        self.messages: list[dict[str, Any]] = []
        self.usage: list[TurnUsage] = []
        self.side_calls: list[SideCall] = []
        self.texts: set[str] = set()
        self.started = False
        self.sidechain: SideCall | None = None
        self.reasoning_effort: Any = None
        self.copied = 0
        self.compactions = 0
        self.unanswered = 0
        self.unresolved: list[str] = []

    @property
    def turns(self) -> int:
        return len(self.usage)

    def emit(self, message: dict[str, Any]) -> None:
        self.messages.append(message)
        if message.get("content"):
            self.texts.add(message["content"])

    def step(self, index: int, step: Any) -> None:
        if not isinstance(step, dict):
            raise AtifError(f"steps[{index}] is not an object")
        source = step.get("source")
        if source not in ("system", "user", "agent"):
            raise AtifError(f"steps[{index}]: unknown source {source!r}")
        extra = _dict(step.get("extra"))
        if extra.get("is_sidechain") is True:
            self.sidechain_step(step)
            return
        self.sidechain = None
        if step.get("is_copied_context") is True:
            self.copied += 1
            if source == "agent" or _text(step.get("message")) in self.texts:
                return
        if source == "agent":
            self.agent_step(step)
        else:
            self.context_step(step, source, extra)
            if source == "system":
                return
        self.started = True

    def sidechain_step(self, step: dict[str, Any]) -> None:
        if self.sidechain is None:
            self.sidechain = SideCall(kind=SideCallKind.SUBAGENT, turn=max(self.turns - 1, 0))
            self.side_calls.append(self.sidechain)
        self.sidechain.tokens += _step_tokens(step)

    def context_step(self, step: dict[str, Any], source: str, extra: dict[str, Any]) -> None:
        management = extra.get("context_management")
        compaction = source == "system" and isinstance(management, dict) and management.get("type") == "compaction"
        text = _text(step.get("message"))
        if compaction:
            self.compactions += 1
        elif text is not None:
            role = "system" if source == "system" and not self.started else "user"
            self.emit({"role": role, "content": text})
        kind = SideCallKind.SUMMARISATION if compaction else SideCallKind.SUBAGENT
        before = len(self.side_calls)
        contents = self.observation_side(step, kind, self.turns)
        if compaction and len(self.side_calls) == before:
            self.side_calls.append(SideCall(kind=kind, turn=self.turns))
        if contents:
            self.emit({"role": "user", "content": "\n".join(contents)})

    def observation_side(self, step: dict[str, Any], kind: SideCallKind, turn: int) -> list[str]:
        """Side calls of the step's observation; returns the contents of its results."""
        contents = []
        for result in self.results(step):
            for ref in result.get("subagent_trajectory_ref") or []:
                self.side_calls.append(SideCall(kind=kind, turn=turn, tokens=self.ref_tokens(ref)))
            content = _text(result.get("content"))
            if content is not None:
                contents.append(content)
        return contents

    @staticmethod
    def results(step: dict[str, Any]) -> list[dict[str, Any]]:
        observation = step.get("observation")
        results = observation.get("results") if isinstance(observation, dict) else None
        return [r for r in results if isinstance(r, dict)] if isinstance(results, list) else []

    def agent_step(self, step: dict[str, Any]) -> None:
        turn = self.turns
        if self.reasoning_effort is None:
            self.reasoning_effort = step.get("reasoning_effort")
        message: dict[str, Any] = {"role": "assistant", "content": _text(step.get("message"))}
        if isinstance(step.get("reasoning_content"), str) and step["reasoning_content"]:
            message["reasoning_content"] = step["reasoning_content"]
        calls: list[dict[str, Any]] = []
        for i, call in enumerate(c for c in step.get("tool_calls") or [] if isinstance(c, dict)):
            arguments = call.get("arguments", {})
            calls.append(
                {
                    "id": str(call.get("tool_call_id") or f"call_{step.get('step_id', turn)}_{i}"),
                    "type": "function",
                    "function": {
                        "name": str(call.get("function_name", "")),
                        "arguments": arguments
                        if isinstance(arguments, str)
                        else json.dumps(arguments, ensure_ascii=False),
                    },
                }
            )
        if calls:
            message["tool_calls"] = calls
        self.emit(message)
        self.usage.append(_turn_usage(step.get("metrics")))

        ids = [c["id"] for c in calls]
        answered: dict[str, list[str]] = defaultdict(list)
        loose: list[str] = []
        for result in self.results(step):
            for ref in result.get("subagent_trajectory_ref") or []:
                self.side_calls.append(SideCall(kind=SideCallKind.SUBAGENT, turn=turn, tokens=self.ref_tokens(ref)))
            content = _text(result.get("content"))
            call_id = result.get("source_call_id")
            if isinstance(call_id, str) and call_id in ids:
                answered[call_id].append(content or "")
            elif content is not None:
                loose.append(content)
        waiting = [i for i in ids if i not in answered]
        for call_id, content in zip(waiting, loose, strict=False):
            answered[call_id].append(content)
        if waiting:
            surplus = loose[len(waiting) :]
            if surplus:
                answered[waiting[-1]].extend(surplus)
            loose = []
        for call_id in ids:
            if call_id not in answered:
                self.unanswered += 1
            self.emit({"role": "tool", "tool_call_id": call_id, "content": "\n".join(answered.get(call_id, []))})
        if loose:
            self.emit({"role": "user", "content": "\n".join(loose)})

    def ref_tokens(self, ref: Any) -> int:
        if not isinstance(ref, dict):
            return 0
        sub = self.embedded.get(ref.get("trajectory_id")) if ref.get("trajectory_id") else None
        path = ref.get("trajectory_path")
        if sub is None and isinstance(path, str) and path and self.base_dir is not None and "://" not in path:
            for candidate in (self.base_dir / path, self.base_dir / Path(path).name):
                try:
                    loaded = json.loads(candidate.read_text(encoding="utf-8"))
                except (OSError, ValueError):
                    continue
                if isinstance(loaded, dict):
                    sub = loaded
                    break
        if sub is None:
            self.unresolved.append(str(ref.get("trajectory_id") or path or ref.get("session_id") or "?"))
            return 0
        return trajectory_tokens(sub)

    def finish(self) -> None:
        last = max(self.turns - 1, 0)
        for call in self.side_calls:
            call.turn = min(call.turn, last)


_MALFORMED = (
    TypeError,
    AttributeError,
    KeyError,
    IndexError,
    OverflowError,
    ValueError,
    RecursionError,
    ValidationError,
)
"""What a malformed document can raise deep inside the conversion; at this boundary it becomes AtifError."""


def _guarded(convert: Any) -> Any:
    """Wrap an ATIF reader so a malformed document (a field of the wrong type, non-finite numbers, nesting
    deeper than Python recurses) is reported as AtifError, never another exception."""
    import functools

    @functools.wraps(convert)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return convert(*args, **kwargs)
        except AtifError:
            raise
        except _MALFORMED as e:
            raise AtifError(f"malformed trajectory: {type(e).__name__}: {str(e)[:300]}") from e

    return wrapper


@_guarded
def atif_to_messages(
    trajectory: dict[str, Any], *, base_dir: Path | None = None
) -> tuple[list[dict[str, Any]], list[TurnUsage], list[SideCall], dict[str, Any]]:
    """OpenAI chat messages, per-turn usage, side calls and provenance of an ATIF trajectory.

    `base_dir` is the folder of the trajectory file; subagent trajectories referenced by a relative
    `trajectory_path` are read from it for their token counts. Raises AtifError when the document
    is not ATIF. The rules are in the module docstring.
    """
    steps = _check_trajectory(trajectory)
    conv = _Converter(trajectory, base_dir)
    for index, step in enumerate(steps):
        conv.step(index, step)
    conv.finish()
    agent = _dict(trajectory.get("agent"))
    meta: dict[str, Any] = {
        "schema_version": trajectory.get("schema_version"),
        "session_id": trajectory.get("session_id"),
        "agent_name": agent.get("name"),
        "agent_version": agent.get("version"),
        "model_name": agent.get("model_name"),
        "steps": len(steps),
        "copied_steps": conv.copied,
        "compactions": conv.compactions,
        "unanswered_tool_calls": conv.unanswered,
        "unresolved_subagents": conv.unresolved,
        "reasoning_effort": conv.reasoning_effort,
    }
    return conv.messages, conv.usage, conv.side_calls, meta


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "null"


@_guarded
def atif_tools(trajectory: dict[str, Any]) -> tuple[list[dict[str, Any]], bool]:
    """OpenAI tool definitions of a trajectory, and whether they were derived from the calls made."""
    agent = _dict(trajectory.get("agent"))
    defined = agent.get("tool_definitions")
    if isinstance(defined, list) and defined:
        tools = []
        for tool in defined:
            if isinstance(tool, dict) and isinstance(tool.get("function"), dict):
                tools.append({**tool, "type": tool.get("type") or "function"})
            elif isinstance(tool, dict) and "name" in tool:
                tools.append({"type": "function", "function": tool})
        return tools, False
    properties: dict[str, dict[str, dict[str, str]]] = {}
    for step in trajectory.get("steps") or []:
        calls = step.get("tool_calls") if isinstance(step, dict) else None
        for call in calls if isinstance(calls, list) else []:  # a step of another kind may carry anything here
            if not isinstance(call, dict) or not call.get("function_name"):
                continue
            props = properties.setdefault(str(call["function_name"]), {})
            arguments = call.get("arguments")
            for key, value in (arguments or {}).items() if isinstance(arguments, dict) else ():
                props.setdefault(str(key), {"type": _json_type(value)})
    tools = [
        {"type": "function", "function": {"name": name, "parameters": {"type": "object", "properties": props}}}
        for name, props in properties.items()
    ]
    return tools, True
