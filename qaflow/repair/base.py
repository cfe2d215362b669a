"""The two roles a repair round plugs in, as protocols: the `Repairer` edits a copy of a task, the
`Reviewer` (the independent audit agent) judges the result. Implementations inherit nothing.

Nothing a repairer says is evidence: the rounds diff the copy themselves and re-audit it from
scratch; the reviewer only adds a veto on top of a clean deterministic audit.

A repairer or reviewer that cannot do its job (a model error after retries, malformed output
that stayed malformed) raises a `QaflowError` such as `RepairError`: the round records it as a
model failure and the task as unresolved. Any other exception is a bug, recorded with its traceback.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from qaflow.errors import PathError
from qaflow.models.audit import AuditFinding, TaskAudit
from qaflow.models.repair import ReviewVerdict
from qaflow.task import Task


class RepairError(PathError):
    """A repair could not be done: a model failure, or a repair setup that cannot work (`path` says where)."""


class RepairOutcome(BaseModel):
    """What a repairer reports about one round. Its claims are kept for people, never trusted."""

    summary: str = Field(description="What the repairer says it changed and why.")
    changed_files: list[str] = Field(default_factory=list, description="Files it says it changed (task-relative).")
    outputs: dict[str, Any] = Field(
        default_factory=dict,
        description="Agent transcript, tool calls, rules applied (JSON-serialisable): kept in the ledger.",
    )
    gave_up: bool = Field(default=False, description="The repairer found nothing it can fix; no more rounds.")


@runtime_checkable
class Repairer(Protocol):
    """Edits `work_dir`, a private copy of `task`, in place, to fix `findings` (round 1, 2, ...)."""

    name: str

    def repair(self, task: Task, work_dir: Path, findings: list[AuditFinding], round: int) -> RepairOutcome: ...


@runtime_checkable
class Reviewer(Protocol):
    """The independent audit agent: sees the original, the repaired task, the diff between them and
    the fresh deterministic audit of the repaired task, and accepts or rejects the repair."""

    name: str

    def review(self, original: Task, repaired: Task, diff: str, audit: TaskAudit) -> ReviewVerdict: ...
