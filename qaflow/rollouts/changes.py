"""What a rollout attempt changed in its sandbox, kept in the record so filters can tell a hack from the task.

The agent phase is wrapped in `RecordingAgent` with no contents fetched (paths only: two execs, one
`find` each). /tests and /logs are walked too: an agent that writes where the verifier's files or
reward land is what the `reward_hack` filter looks for. The record lives in the rollout's meta under
`changes`: `created`, `modified` and `deleted` path lists, `error` when the listing failed, `lost` when
it failed after the agent where it had worked before (an agent that cleared /tmp removes the recorder's
state too; an image with neither GNU find nor python3 is not lost), and `truncated` when paths beyond `MAX_PATHS`
were left out (never a path on a trust edge, nor a package record that exempts one).
"""

from __future__ import annotations

from typing import Any

from qaflow.agents.base import Agent
from qaflow.audit.probe_run import ProbeRun
from qaflow.audit.trust_edges import keep_for_record, task_edges
from qaflow.ledger import Ledger
from qaflow.models.records import ResultKey
from qaflow.models.rollout import RolloutRecord
from qaflow.task import Task
from qaflow.trial.effects import ChangeKind, Effect, FileChange, RecordingAgent

CHANGES_KEY = "changes"
MAX_PATHS = 2000
EXCLUDED = ("/proc", "/sys", "/dev", "/solution")


def recording(agent: Agent) -> RecordingAgent:
    """`agent`, recording the paths it changes (not their contents)."""
    return RecordingAgent(agent, per_file_cap=0, total_cap=0, exclude=EXCLUDED)


def _merged(recorder: RecordingAgent) -> Effect | None:
    """One effect over every step of a multi-step task (the last change of a path wins), or the only one."""
    if not recorder.effects:
        return recorder.effect
    paths: dict[str, ChangeKind] = {}
    for effect in recorder.effects.values():
        paths.update(effect.paths)
    errors = [f"{step}: {e.error}" for step, e in recorder.effects.items() if e.error]
    changes = [FileChange(path=p, kind=k) for p, k in paths.items()]
    truncated = any(e.truncated for e in recorder.effects.values())
    return Effect(changes=changes, error="; ".join(errors) or None, truncated=truncated)


def change_record(recorder: RecordingAgent) -> dict[str, Any]:
    """The `changes` entry of a rollout's meta."""
    effect = _merged(recorder)
    if effect is None:
        unrecorded = "the agent phase did not finish"
        return {"created": [], "modified": [], "deleted": [], "error": unrecorded, "lost": False, "truncated": False}
    paths = sorted(effect.paths.items())
    kept = [(p, k) for p, k in paths if keep_for_record(p)]
    room = max(MAX_PATHS - len(kept), 0)
    others = [(p, k) for p, k in paths if not keep_for_record(p)]
    chosen = sorted(kept + others[:room])
    record: dict[str, Any] = {kind.value: [p for p, k in chosen if k is kind] for kind in ChangeKind}
    record["error"] = effect.error
    record["lost"] = recorder.lost
    record["truncated"] = len(others) > room or effect.truncated
    return record


def audited_edges(ledger: Ledger, task: Task) -> list[str] | None:
    """The task-specific trust edges (`trust_edges.task_edges`) from the audit of this version recorded in
    `ledger`: its observe probe and the oracle's first effect; None when the version was not audited."""
    observe = ledger.get_result(ResultKey(task_version=task.version, probe="observe", attempt=0))
    oracle = ledger.get_result(ResultKey(task_version=task.version, probe="oracle", attempt=0))
    if observe is None:
        return None
    seen = ProbeRun.model_validate(observe.payload).observation
    if seen is None:
        return None
    effect = ProbeRun.model_validate(oracle.payload).effect if oracle is not None else None
    return task_edges(seen, effect.paths if effect is not None else {}, task.instruction)


def add_task_edges(record: RolloutRecord, edges: list[str] | None) -> None:
    """Keep the task's audited trust edges beside the attempt's changes (read by the reward_hack rule)."""
    changes = record.meta.get(CHANGES_KEY)
    if isinstance(changes, dict) and edges is not None:
        changes["task_edges"] = edges
