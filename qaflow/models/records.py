"""Rows of the ledger as pydantic models, and the closed vocabularies (StrEnums) they use.

These are the boundary types of `qaflow.ledger`: every ledger method takes or returns them,
so the rest of qaflow never handles raw SQLite rows.
"""

from __future__ import annotations

from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from qaflow.models.probe_key import ProbeKey
from qaflow.models.trial import ExitStatus


def utcnow() -> datetime:
    """The current time, timezone-aware in UTC (the only kind of time the ledger stores)."""
    return datetime.now(UTC)


class VersionStatus(StrEnum):
    """Where one task version stands. A version's files never change; its status does."""

    NEW = "new"
    """Loaded fine, not yet audited."""
    INVALID = "invalid"
    """Cannot be loaded (bad task.toml, missing files, path escapes, ...); `error` says why."""
    ACCEPTED = "accepted"
    """Audited and sound."""
    NEEDS_REPAIR = "needs_repair"
    """Audited; findings say what is wrong."""
    REPAIRED = "repaired"
    """Superseded by a repaired child version."""
    RETIRED = "retired"
    """Taken out of use on purpose."""
    UNRESOLVED = "unresolved"
    """Repair was tried and did not succeed; the `unresolved` result and the status log say why."""
    CANDIDATE = "candidate"
    """A hardened or repaired version that the acceptance gate (`qaflow accept`) has not accepted: some
    independent evidence (a clean audit, the oracle passing, other solvers' attempts in the band) is missing."""


class RunKind(StrEnum):
    """What a run did. New kinds are added here as the steps that record runs are written."""

    SCAN = "scan"
    IMPORT = "import"
    AUDIT = "audit"
    REPAIR = "repair"
    HARDEN = "harden"
    ROLLOUT = "rollout"
    EVAL = "eval"
    REVIEW = "review"


class Severity(StrEnum):
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"


class FindingCode(StrEnum):
    """Audit finding codes (a contract: these names stay; new codes may be added)."""

    INVALID_TASK = "invalid_task"
    BUILD_FAILED = "build_failed"
    FALSE_PASS = "false_pass"
    WEAK_VERIFIER = "weak_verifier"
    FALSE_REJECTION = "false_rejection"
    BROKEN_SOLUTION = "broken_solution"
    FLAKY = "flaky"
    LEAK = "leak"
    REWARD_TAMPER = "reward_tamper"
    INFRA_ERROR = "infra_error"
    AUDIT_ERROR = "audit_error"
    """The audit itself failed on this task (a qaflow bug); the evidence holds the traceback."""
    LINT = "lint"
    """Static advice (e.g. no timeout set); a warning, it does not change the verdict."""
    UNVERIFIED_REQUIREMENT = "unverified_requirement"
    """A requirement declared in `[metadata.qaflow]` that no verifier check reaches (declared scope left
    unchecked); an error: the verifier has a gap."""


class _Row(BaseModel):
    model_config = ConfigDict(frozen=True)


class TaskVersion(_Row):
    """One version of a task: its content hash, where it was seen first, and its status."""

    version: str = Field(description="sha256 of the task folder's files (paths and bytes, sorted).")
    name: str
    source: str = Field(description="Where the task came from (task.toml `source`/metadata.source, or 'local').")
    parent_version: str | None = Field(default=None, description="The version this one was derived from.")
    path: str = Field(description="Task folder, relative to the pool root (POSIX separators).")
    status: VersionStatus
    error: str | None = Field(default=None, description="For invalid versions: 'file: reason'.")
    created_at: datetime

    @property
    def short(self) -> str:
        return self.version[:12]

    @property
    def origin(self) -> str | None:
        """The step that made this version from another (`harden`, `repair`), from its `source`; None for
        a version loaded from a task folder as it was written."""
        kind, sep, _ = self.source.partition(":")
        return kind if sep and kind in {"harden", "repair"} else None


class Head(_Row):
    """The version currently found at a pool path (the pool's present state, not history)."""

    path: str
    version: str
    seen_at: datetime


class TaskRow(_Row):
    """A row of the `tasks` view: one task folder present in the pool, with its current version."""

    name: str
    path: str
    version: str
    status: VersionStatus
    error: str | None = None
    source: str
    parent_version: str | None = None
    created_at: datetime
    seen_at: datetime

    @property
    def short(self) -> str:
        return self.version[:12]


class StatusChange(_Row):
    """One recorded change of a version's status (the ledger's audit trail of status edits)."""

    id: int
    version: str
    old_status: VersionStatus | None
    new_status: VersionStatus
    reason: str
    run_id: str | None = None
    created_at: datetime


class Run(_Row):
    run_id: str
    kind: RunKind
    started_at: datetime
    ended_at: datetime | None = None
    config: dict[str, Any] = Field(default_factory=dict)
    host: str


class ResultKey(_Row):
    """The key of a work item: doing the same key twice is redundant and is skipped."""

    task_version: str
    probe: str
    attempt: int = 0


class Result(_Row):
    task_version: str
    probe: str
    attempt: int = 0
    run_id: str
    backend: str
    status: ExitStatus
    reward: float | None = None
    payload: dict[str, Any] = Field(default_factory=dict)
    duration_s: float = 0.0
    created_at: datetime = Field(default_factory=utcnow)

    @property
    def key(self) -> ResultKey:
        return ResultKey(task_version=self.task_version, probe=self.probe, attempt=self.attempt)

    @property
    def probe_key(self) -> ProbeKey | None:
        """The probe typed (kind, name, step); None where `probe` is not a probe key (written by other tools)."""
        return ProbeKey.read(self.probe)


class Finding(_Row):
    id: int | None = None
    task_version: str
    run_id: str
    code: FindingCode
    severity: Severity
    message: str
    evidence: dict[str, Any] = Field(default_factory=dict)
    created_at: datetime = Field(default_factory=utcnow)
