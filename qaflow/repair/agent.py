"""`LLMRepairer`: the repair agent. A tool-calling loop over `LLM.complete` that edits a private copy
of a task (read, write, edit, list files; run the oracle or nop probe on the copy) until it calls
`finish`, or runs out of turns or tool calls.

Every path the model names is resolved inside the copy; anything else (absolute, `..`, a symlink
leading out) is refused, and the refusal goes back to the model as the tool result, as do malformed
calls (`ToolCallError`). Nothing the model sends can raise out of the loop; a model failure
(`LLMError`) raises `RepairError`, which the rounds record as a model failure.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from qaflow.errors import LLMError, QaflowError, ToolCallError
from qaflow.llm import LLM, parse_tool_call
from qaflow.models.audit import AuditFinding
from qaflow.repair.base import RepairError, RepairOutcome
from qaflow.repair.context import findings_json, list_task_files, render, task_files, view_file
from qaflow.task import Task


class LLMRepairerConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_turns: int = Field(20, ge=1)
    """Model calls per round."""
    max_tool_calls: int = Field(40, ge=1)
    """Tool calls per round (malformed ones count)."""
    backend: str = "auto"
    """Sandbox backend of `run_probe`."""
    file_cap: int = Field(8_000, ge=100)
    """Characters of one file in the first prompt and in a `read_file` result."""
    output_tail: int = Field(2_000, ge=100)
    """Characters kept of each output stream in a `run_probe` result."""


# -- tools: argument models are the boundary, their JSON schemas are what the model sees --------


class _PathArgs(BaseModel):
    path: str = Field(description="Path relative to the task folder, e.g. tests/test.sh.")


class _WriteArgs(_PathArgs):
    content: str = Field(description="The whole new content of the file.")


class _EditArgs(_PathArgs):
    old: str = Field(description="Exact text to replace; it must occur exactly once in the file.")
    new: str = Field(description="Replacement text.")


class _NoArgs(BaseModel):
    pass


class _ProbeArgs(BaseModel):
    agent: Literal["oracle", "nop"] = Field(description="oracle runs solution/solve.sh; nop does nothing.")


class _FinishArgs(BaseModel):
    summary: str = Field(description="What you changed and why.")


_TOOL_ARGS: dict[str, tuple[type[BaseModel], str]] = {
    "read_file": (_PathArgs, "Read a file of the task copy."),
    "write_file": (_WriteArgs, "Create or overwrite a file of the task copy."),
    "edit_file": (_EditArgs, "Replace one exact, unique occurrence of `old` by `new` in a file."),
    "list_files": (_NoArgs, "List the files of the task copy."),
    "run_probe": (_ProbeArgs, "Run a trial of the current copy with the oracle or nop agent; returns the reward."),
    "finish": (_FinishArgs, "End the repair with a summary of the changes."),
}


def _tool(name: str, args: type[BaseModel], description: str) -> dict[str, Any]:
    schema = args.model_json_schema()
    parameters = {"type": "object", "properties": schema.get("properties", {}), "required": schema.get("required", [])}
    return {"type": "function", "function": {"name": name, "description": description, "parameters": parameters}}


TOOLS = [_tool(name, args, text) for name, (args, text) in _TOOL_ARGS.items()]


class Refused(Exception):
    """A tool call that is well-formed but cannot be done; its text goes back to the model."""


class Workspace:
    """File tools confined to one folder (the task copy)."""

    def __init__(self, root: Path, *, file_cap: int = 8_000):
        self.root = root.resolve()
        self.file_cap = file_cap
        self.changed: list[str] = []

    def resolve(self, rel: str) -> Path:
        """The absolute path of `rel`, refused unless it stays inside the copy (symlinks followed)."""
        if not rel or Path(rel).is_absolute() or rel.startswith("~"):
            raise Refused(f"refused: {rel!r} is not a path relative to the task folder")
        target = (self.root / rel).resolve()
        if target != self.root and self.root not in target.parents:
            raise Refused(f"refused: {rel!r} resolves outside the task folder")
        if target == self.root:
            raise Refused(f"refused: {rel!r} is the task folder itself, not a file")
        return target

    def read_file(self, path: str) -> str:
        target = self.resolve(path)
        if not target.is_file():
            raise Refused(f"no such file: {path}")
        view = view_file(self.root, target.relative_to(self.root).as_posix(), self.file_cap)
        if view.content is None:
            return f"{path}: {view.size} bytes, {view.note}; not shown"
        return view.content + (f"\n[... truncated: {view.note} of {view.size} bytes]" if view.truncated else "")

    def write_file(self, path: str, content: str) -> str:
        target = self.resolve(path)
        if target.is_dir():
            raise Refused(f"{path} is a folder")
        target.parent.mkdir(parents=True, exist_ok=True)
        mode = target.stat().st_mode if target.exists() else None
        target.write_text(content, encoding="utf-8")
        if mode is not None:
            target.chmod(mode)
        self._changed(target)
        return f"wrote {len(content)} characters to {path}"

    def edit_file(self, path: str, old: str, new: str) -> str:
        target = self.resolve(path)
        if not target.is_file():
            raise Refused(f"no such file: {path}")
        text = target.read_text(encoding="utf-8")
        count = text.count(old) if old else 0
        if count != 1:
            raise Refused(f"`old` must occur exactly once in {path}; it occurs {count} times")
        target.write_text(text.replace(old, new, 1), encoding="utf-8")
        self._changed(target)
        return f"edited {path}"

    def list_files(self) -> str:
        return "\n".join(list_task_files(self.root))

    def _changed(self, target: Path) -> None:
        rel = target.relative_to(self.root).as_posix()
        if rel not in self.changed:
            self.changed.append(rel)


class _Stop(Exception):
    def __init__(self, reason: str, summary: str):
        self.reason, self.summary = reason, summary


class LLMRepairer:
    """The repair agent; implements `Repairer`."""

    def __init__(self, llm: LLM, config: LLMRepairerConfig | None = None, **kwargs: Any):
        self.llm = llm
        self.config = config or LLMRepairerConfig(**kwargs)
        self.name = f"llm:{llm.model}"

    def repair(self, task: Task, work_dir: Path, findings: list[AuditFinding], round: int) -> RepairOutcome:
        """Edit `work_dir` to fix `findings`.

        Raises:
            RepairError: the model failed (retries exhausted, a non-retryable error, script exhausted).
        """
        cfg = self.config
        space = Workspace(work_dir, file_cap=cfg.file_cap)
        variables = {"max_turns": cfg.max_turns, "max_tool_calls": cfg.max_tool_calls}
        user = render(
            "repair_user",
            round=round,
            task_name=task.name,
            instruction=task.instruction,
            files=task_files(space.root, cap=cfg.file_cap),
            findings=findings_json(findings),
        )
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": render("repair_system", **variables)},
            {"role": "user", "content": user},
        ]
        state: dict[str, Any] = {"tool_calls": 0, "turns": 0, "probes": [], "refused": 0}
        try:
            for _ in range(cfg.max_turns):
                state["turns"] += 1
                self._step(space, messages, state)
            raise _Stop("turn_limit", f"stopped after {cfg.max_turns} turns without finish")
        except _Stop as stop:
            outputs = {"model": self.llm.model, "stopped": stop.reason, "messages": messages, **state}
            return RepairOutcome(summary=stop.summary, changed_files=space.changed, outputs=outputs)

    def _step(self, space: Workspace, messages: list[dict[str, Any]], state: dict[str, Any]) -> None:
        try:
            reply = self.llm.complete(messages, tools=TOOLS)
        except LLMError as e:
            raise RepairError(space.root, f"repair model failed: {e}") from e
        messages.append(reply.message)
        if not reply.tool_calls:
            messages.append({"role": "user", "content": "Use the tools; call finish(summary) when you are done."})
            return
        finished: str | None = None
        for raw in reply.tool_calls:
            call_id = str(raw.get("id") or "")
            if state["tool_calls"] >= self.config.max_tool_calls:
                result = "not run: the tool-call budget is exhausted"
            else:
                state["tool_calls"] += 1
                result, done = self._call(space, raw, state)
                finished = done if done is not None else finished
            messages.append({"role": "tool", "tool_call_id": call_id, "content": result})
        if finished is not None:
            raise _Stop("finished", finished)
        if state["tool_calls"] >= self.config.max_tool_calls:
            raise _Stop("tool_budget", f"stopped after {self.config.max_tool_calls} tool calls without finish")

    def _call(self, space: Workspace, raw: dict[str, Any], state: dict[str, Any]) -> tuple[str, str | None]:
        """(tool result text, finish summary or None); never raises for anything the model sent."""
        try:
            call = parse_tool_call(raw, TOOLS)
            args = _TOOL_ARGS[call.name][0].model_validate(call.arguments)
        except ToolCallError as e:
            state["refused"] += 1
            return str(e), None
        except ValidationError as e:
            state["refused"] += 1
            name = (raw.get("function") or {}).get("name")
            return f"Error in tool call {name!r}: invalid arguments: {e}", None
        try:
            if isinstance(args, _FinishArgs):
                return "finished", args.summary
            if isinstance(args, _ProbeArgs):
                return self._probe(space, args.agent, state), None
            if call.name == "list_files":
                return space.list_files(), None
            return getattr(space, call.name)(**args.model_dump()), None
        except Refused as e:
            state["refused"] += 1
            return str(e), None
        except (OSError, UnicodeError) as e:
            return f"Error in tool call {call.name!r}: {type(e).__name__}: {e}", None

    def _probe(self, space: Workspace, agent: str, state: dict[str, Any]) -> str:
        from qaflow.agents.scripted import agent_by_name
        from qaflow.trial import run_trial

        try:
            task = Task.load(space.root)
        except QaflowError as e:
            return f"the task copy does not load: {e}"
        result = run_trial(task, agent_by_name(agent), backend=self.config.backend)
        tail = self.config.output_tail

        def tails(ex: Any) -> dict[str, Any] | None:
            if ex is None:
                return None
            return {"exit_code": ex.exit_code, "stdout": ex.stdout[-tail:], "stderr": ex.stderr[-tail:]}

        report = {
            "agent": agent,
            "reward": result.reward,
            "exit_status": result.exit_status.value,
            "error": f"{result.error.kind.value}: {result.error.message}"[-tail:] if result.error else None,
            "agent_exec": tails(result.agent_exec),
            "verifier_exec": tails(result.verifier_exec),
        }
        state["probes"].append({"agent": agent, "reward": result.reward, "exit_status": result.exit_status.value})
        return json.dumps(report, indent=1)
