"""The replay policy's script: a task's reference solution replayed through the harness's tools (what
`openai/replay-oracle` means in a rollout job; `qaflow.rollouts.replay` records a pool's worth of them)."""

from __future__ import annotations

import random

from qaflow.llm import LLMConfig, ScriptedReply
from qaflow.llm.config import ScriptedToolCall
from qaflow.models.rollout import REPLAY_MODEL, Effort
from qaflow.task import Task

THINKING_WORDS = {Effort.OFF: 0, Effort.LOW: 40, Effort.MEDIUM: 120, Effort.XHIGH: 360}
_WORDS = ["check", "the", "files", "then", "run", "solution", "verify", "output", "edge", "case", "plan", "step"]


def replay_config(task: Task, effort: Effort, attempt: int, *, skip_rate: float = 0.25, seed: int = 0) -> LLMConfig:
    """A scripted LLMConfig replaying `task`'s reference solution (see the module docstring)."""
    effort = Effort(effort)
    rng = random.Random(f"{seed}:{task.version}:{effort.value}:{attempt}")
    base = THINKING_WORDS[effort]

    def thought() -> str | None:
        n = int(base * rng.uniform(0.6, 1.4))
        return " ".join(rng.choices(_WORDS, k=n)) if n else None

    solve = (task.solution_dir / "solve.sh").read_text(encoding="utf-8") if task.solution_dir.is_dir() else "true"
    skip = rng.random() < skip_rate
    script = [
        ScriptedReply(reasoning=thought(), tool_calls=[ScriptedToolCall(name="bash", arguments={"command": "ls -la"})]),
        ScriptedReply(reasoning=thought(), tool_calls=[ScriptedToolCall(name="bash", arguments={"command": "pwd"})]),
        ScriptedReply(
            reasoning=thought(),
            tool_calls=[ScriptedToolCall(name="bash", arguments={"command": "true" if skip else solve})],
        ),
        ScriptedReply(reasoning=thought(), tool_calls=[ScriptedToolCall(name="bash", arguments={"command": "ls -la"})]),
        ScriptedReply(content="I ran the steps and checked the result."),
    ]
    return LLMConfig(model=REPLAY_MODEL, script=script)
