"""A multi-step attempt as one rollout record: the steps' conversations joined in order.

Each step is a fresh conversation (the system prompt and the step's instruction), as Harbor runs
steps by default. The record's `messages` hold them in order, every step after the first starting
at its user message (the system prompt, the same for every step, appears once), so the record is
one well-formed session for the filters and exports (a tool call id that an earlier step already
used gets `@<step>` appended, in the call and in its result). `meta["steps"]` gives, per step, where its
messages start and how it ended: what the model saw at step k is `messages[0]` and
the messages from its start to the next step's.
"""

from __future__ import annotations

from typing import Any

from qaflow.agents.harness import StopReason, Trajectory
from qaflow.models.trial import StepResult, TrialResult


def join_trajectories(trajectories: list[Trajectory]) -> Trajectory:
    """The steps' conversations as one trajectory (see the module doc); turns in side calls are renumbered."""
    joined = Trajectory()
    stops = []
    seen: set[str] = set()
    for i, part in enumerate(trajectories):
        messages = part.messages
        if i > 0 and messages and messages[0].get("role") == "system":
            messages = messages[1:]
        messages = _unique_call_ids(messages, seen, part.step or str(i))
        offset = joined.turns
        joined.messages += messages
        joined.usage += part.usage
        joined.side_calls += [c.model_copy(update={"turn": c.turn + offset}) for c in part.side_calls]
        joined.tool_errors += part.tool_errors
        joined.cost_usd += part.cost_usd
        joined.error = joined.error or part.error
        stops.append(part.stop_reason)
    joined.stop_reason = next((s for s in stops if s != StopReason.DONE), stops[-1] if stops else "")
    return joined


def _unique_call_ids(messages: list[dict[str, Any]], seen: set[str], step: str) -> list[dict[str, Any]]:
    """`messages` with every tool call id in `seen` (used by an earlier step) renamed `<id>@<step>`; adds
    this step's ids to `seen`."""
    ids = {c.get("id") for m in messages for c in m.get("tool_calls") or [] if c.get("id")}
    clash = {i for i in ids if i in seen}
    seen |= {f"{i}@{step}" if i in clash else i for i in ids}
    if not clash:
        return messages
    out = []
    for m in messages:
        m = dict(m)
        if m.get("tool_call_id") in clash:
            m["tool_call_id"] = f"{m['tool_call_id']}@{step}"
        if m.get("tool_calls"):
            m["tool_calls"] = [{**c, "id": f"{c['id']}@{step}"} if c.get("id") in clash else c for c in m["tool_calls"]]
        out.append(m)
    return out


def step_meta(trajectories: list[Trajectory], result: TrialResult) -> list[dict[str, Any]]:
    """Per step that ran: where its messages start in the joined record (None when its agent never ran),
    its turns, stop reason, reward and exit status, and why the trial stopped after it."""
    starts: dict[str, int] = {}
    turns: dict[str, Trajectory] = {}
    position = 0
    for i, part in enumerate(trajectories):
        skip = 1 if i > 0 and part.messages and part.messages[0].get("role") == "system" else 0
        first_user = next((j for j, m in enumerate(part.messages) if m.get("role") == "user"), skip)
        starts[part.step or ""] = position + first_user - skip
        turns[part.step or ""] = part
        position += len(part.messages) - skip
    return [_meta(step, starts.get(step.name), turns.get(step.name)) for step in result.steps]


def _meta(step: StepResult, start: int | None, part: Trajectory | None) -> dict[str, Any]:
    return {
        "name": step.name,
        "start": start,
        "turns": part.turns if part is not None else 0,
        "stop_reason": part.stop_reason if part is not None else None,
        "reward": step.reward,
        "rewards": step.rewards,
        "full_reward": step.full_reward,
        "exit_status": step.exit_status.value,
        "error": None if step.error is None else f"{step.error.kind.value}: {step.error.message}",
        "aborted": step.aborted,
    }


def steps_verifier_output(result: TrialResult, limit: int) -> str:
    """Every step's verifier output under a `## step <name>` line, the last `limit` characters."""
    parts = []
    for step in result.steps:
        ex = step.verifier_exec
        if ex is not None:
            parts.append(f"## step {step.name}\n" + ex.stdout + ("\n" + ex.stderr if ex.stderr else ""))
    return "\n".join(parts)[-limit:]
