"""Builds rollout records for tests: a valid trajectory by default, with knobs to break one rule at a time."""

from __future__ import annotations

import json
from typing import Any

from qaflow.agents.tool_specs import TOOLS
from qaflow.models.rollout import RolloutRecord, TurnUsage


def tool_turns(n: int, *, prefix: str = "c") -> list[dict[str, Any]]:
    """`n` assistant turns, each one bash call followed by its tool result."""
    messages: list[dict[str, Any]] = []
    for i in range(n):
        call_id = f"{prefix}{i}"
        messages.append(
            {
                "role": "assistant",
                "content": f"step {i}",
                "reasoning_content": f"I should run step {i}",
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": "bash", "arguments": json.dumps({"command": f"echo {i}"})},
                    }
                ],
            }
        )
        messages.append({"role": "tool", "tool_call_id": call_id, "content": f"{i}\n"})
    return messages


def make_record(
    *,
    task: str = "demo/task",
    tool_steps: int = 5,
    final: str | None = "Done.",
    reward: float | None = 1.0,
    effort: str = "medium",
    attempt: int = 0,
    source: str = "local",
    model: str = "openai/scripted",
    messages: list[dict[str, Any]] | None = None,
    **fields: Any,
) -> RolloutRecord:
    """A passing trajectory: system, user, `tool_steps` tool turns, a final assistant text (None: no final turn)."""
    if messages is None:
        messages = [
            {"role": "system", "content": "You are a coding agent."},
            {"role": "user", "content": f"Solve {task}."},
            *tool_turns(tool_steps),
        ]
        if final is not None:
            messages.append({"role": "assistant", "content": final})
    turns = sum(1 for m in messages if m.get("role") == "assistant")
    usage = [TurnUsage(prompt_tokens=100, completion_tokens=20, reasoning_tokens=5, reasoning_source="provider")]
    defaults: dict[str, Any] = {
        "task": task,
        "task_version": "v-" + task.replace("/", "-"),
        "source": source,
        "model": model,
        "effort": effort,
        "attempt": attempt,
        "messages": messages,
        "tools": TOOLS,
        "usage": usage * turns,
        "thinking_tokens": 5 * turns,
        "turns": turns,
        "reward": reward,
        "full_reward": reward is not None and reward >= 1.0,
        "exit_status": "ok",
        "stop_reason": "done",
    }
    defaults.update(fields)
    return RolloutRecord(**defaults)
