"""The coding agent: a model with exactly four tools (read, write, edit, bash) acting in the sandbox.

The loop: system + instruction -> model turn -> run its tool calls, one tool message per call ->
next turn, until the model answers without a tool call (done) or a limit stops it: turns,
completion tokens, or wall time (the task's agent timeout, or less). A limit stop is reported
to the trial as a timed-out agent phase, so the attempt's exit status is `agent_timeout`; the
verifier still runs. The whole conversation, per-turn usage and reasoning-token counts are kept
in `trajectory` for the rollout record.
"""

from __future__ import annotations

import hashlib
import time
from importlib import resources
from typing import Any

import jinja2
from pydantic import BaseModel, ConfigDict, Field

from qaflow.agents.effort import EffortMap
from qaflow.agents.token_count import counter_from_spec
from qaflow.agents.tool_exec import ToolContext, run_tool
from qaflow.agents.tool_specs import TOOLS
from qaflow.errors import LLMError, ToolCallError
from qaflow.llm import LLM, LLMConfig
from qaflow.llm.account import UsageAccount
from qaflow.llm.client import import_litellm
from qaflow.llm.reply import LLMReply
from qaflow.llm.tools import parse_tool_call
from qaflow.models.rollout import Effort, SideCall, TurnUsage, normalize_message
from qaflow.sandbox.base import ExecResult, Sandbox
from qaflow.task import Task
from qaflow.task_steps import StepTask


class StopReason:
    DONE = "done"
    MAX_TURNS = "max_turns"
    MAX_TOKENS = "max_tokens"
    WALL_TIME = "wall_time"
    LLM_ERROR = "llm_error"


LIMIT_STOPS = frozenset({StopReason.MAX_TURNS, StopReason.MAX_TOKENS, StopReason.WALL_TIME})


class HarnessConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_turns: int = Field(50, ge=1, description="Model turns before the agent is stopped.")
    max_completion_tokens: int | None = Field(
        None, ge=1, description="Completion tokens (all turns) before the agent is stopped; None = no cap."
    )
    max_wall_s: float | None = Field(
        None, gt=0, description="Wall-clock seconds for the agent phase; the task's agent timeout when lower or None."
    )
    tool_output_chars: int = Field(16_000, ge=256, description="Cap on one tool result sent to the model.")
    bash_timeout_s: float = Field(120.0, gt=0, description="Default timeout of one bash command.")
    token_counter: str = Field(
        "approx", description="Counts reasoning tokens the provider does not report: approx or hf:<tokenizer dir>."
    )
    system_prompt: str | None = Field(None, description="A jinja2 template replacing the default system prompt.")
    efforts: EffortMap = Field(default_factory=EffortMap)
    seed: int | None = Field(
        None,
        description="Base of the per-attempt sampling seed: each attempt sends `seed` = a hash of (this, its attempt "
        "key: task version, effort, attempt, round) on every model call, so the attempts of a group differ, each "
        "one replays, and two checkpoints draw the same numbers for the same attempt; None = no seed sent.",
    )


class Trajectory(BaseModel):
    step: str | None = None
    """The step of a multi-step task this conversation is; None for a single-step task."""
    messages: list[dict[str, Any]] = Field(default_factory=list)
    usage: list[TurnUsage] = Field(default_factory=list)
    side_calls: list[SideCall] = Field(default_factory=list)
    stop_reason: str = ""
    error: str | None = None
    tool_errors: int = 0
    cost_usd: float = 0.0

    @property
    def turns(self) -> int:
        return sum(1 for m in self.messages if m.get("role") == "assistant")

    @property
    def thinking_tokens(self) -> int:
        return sum(u.reasoning_tokens for u in self.usage)


def attempt_seed(base: int, key: str) -> int:
    """The sampling seed of one attempt: a 31-bit hash of the base seed and the attempt's key."""
    digest = hashlib.sha256(f"{base}\x00{key}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def _system_prompt(template: str | None, workdir: str) -> str:
    source = template or resources.files("qaflow.agents").joinpath("prompts/system.j2").read_text(encoding="utf-8")
    return jinja2.Environment(undefined=jinja2.StrictUndefined).from_string(source).render(workdir=workdir).strip()


class CodingAgent:
    """One attempt of one model at one effort. Make a new instance per attempt."""

    name = "qaflow"

    def __init__(
        self,
        llm_config: LLMConfig,
        effort: Effort = Effort.OFF,
        config: HarnessConfig | None = None,
        account: UsageAccount | None = None,
        attempt_key: str = "",
    ):
        import_litellm()  # seconds on its first import: paid here, not out of the agent's time limit
        self.config = config or HarnessConfig()
        self.effort = Effort(effort)
        self.llm_config = self.config.efforts.apply(llm_config, self.effort)
        if self.config.seed is not None:
            seed = attempt_seed(self.config.seed, attempt_key)
            self.llm_config = self.llm_config.model_copy(update={"extra": {**self.llm_config.extra, "seed": seed}})
        self.account = account
        self.trajectory = Trajectory()
        self.trajectories: list[Trajectory] = []
        """One fresh conversation per run: per step of a multi-step task, in order."""

    @property
    def sampling(self) -> dict[str, Any]:
        """The settings every model call of this attempt sends: temperature, max tokens, the effort's settings
        (`reasoning_effort` or the provider's own, e.g. a thinking budget) and the seed, if any."""
        cfg = self.llm_config
        out: dict[str, Any] = {"temperature": cfg.temperature, "max_tokens": cfg.max_tokens}
        if cfg.reasoning_effort is not None:
            out["reasoning_effort"] = cfg.reasoning_effort
        return out | {k: v for k, v in cfg.extra.items() if isinstance(v, str | int | float | bool) or v is None}

    def run(self, task: Task, sandbox: Sandbox) -> ExecResult:
        cfg = self.config
        started = time.monotonic()
        budget = task.agent_timeout_sec if cfg.max_wall_s is None else min(cfg.max_wall_s, task.agent_timeout_sec)
        deadline = started + budget
        llm = LLM(self.llm_config, self.account)
        counter = counter_from_spec(cfg.token_counter)
        ctx = ToolContext(
            sandbox=sandbox,
            workdir=sandbox.workdir,
            user=task.config.agent.user,
            env=dict(task.config.environment.env or {}),
            output_chars=cfg.tool_output_chars,
            default_bash_timeout_s=cfg.bash_timeout_s,
            seconds_left=lambda: deadline - time.monotonic(),
        )
        traj = self.trajectory = Trajectory(
            step=task.step_name if isinstance(task, StepTask) else None,
            messages=[
                {"role": "system", "content": _system_prompt(cfg.system_prompt, sandbox.workdir)},
                {"role": "user", "content": task.instruction},
            ],
        )
        self.trajectories.append(traj)
        conversation: list[dict[str, Any]] = list(traj.messages)
        completion_tokens = 0
        stop = StopReason.MAX_TURNS
        for _ in range(cfg.max_turns):
            if time.monotonic() >= deadline:
                stop = StopReason.WALL_TIME
                break
            try:
                reply = llm.complete(conversation, tools=TOOLS)
            except LLMError as e:
                traj.error = str(e)
                stop = StopReason.LLM_ERROR
                break
            self._record_turn(reply, counter)
            conversation.append(reply.message)
            completion_tokens += reply.usage.completion_tokens
            if not reply.tool_calls:
                stop = StopReason.DONE
                break
            for raw in reply.tool_calls:
                text = self._tool_result(ctx, raw)
                tool_message = {"role": "tool", "tool_call_id": raw.get("id") or "", "content": text}
                conversation.append(tool_message)
                traj.messages.append(tool_message)
            if time.monotonic() >= deadline:
                stop = StopReason.WALL_TIME
                break
            if cfg.max_completion_tokens is not None and completion_tokens >= cfg.max_completion_tokens:
                stop = StopReason.MAX_TOKENS
                break
        traj.stop_reason = stop
        elapsed = time.monotonic() - started
        note = "" if stop == StopReason.DONE else f"agent stopped: {stop}" + (f": {traj.error}" if traj.error else "")
        return ExecResult(
            exit_code=0 if stop == StopReason.DONE else 1,
            stderr=note,
            timed_out=stop in LIMIT_STOPS,
            duration_s=elapsed,
        )

    def _record_turn(self, reply: LLMReply, counter: Any) -> None:
        traj = self.trajectory
        traj.messages.append(normalize_message(reply.message))
        usage = reply.usage
        reasoning = reply.reasoning or ""
        if usage.reasoning_reported:
            tokens, source = usage.reasoning_tokens, "provider"
        elif reasoning:
            tokens, source = counter.count(reasoning), counter.source
        else:
            tokens, source = 0, "none"
        traj.usage.append(
            TurnUsage(
                prompt_tokens=usage.prompt_tokens,
                completion_tokens=usage.completion_tokens,
                reasoning_tokens=tokens,
                reasoning_source=source,
            )
        )
        traj.cost_usd += usage.cost_usd

    def _tool_result(self, ctx: ToolContext, raw: dict[str, Any]) -> str:
        try:
            call = parse_tool_call(raw, TOOLS)
        except ToolCallError as e:
            self.trajectory.tool_errors += 1
            return f"error: {e.reason}"
        text, ok = run_tool(ctx, call.name, call.arguments)
        if not ok:
            self.trajectory.tool_errors += 1
        return text
