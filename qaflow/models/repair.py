"""The repair's boundary types: one round's ledger payload, one task's record, and their vocabularies."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, Field

from qaflow.models.audit import AuditFinding


class ReviewReason(BaseModel):
    """One requirement the reviewer checked (e.g. 'the verifier still checks the sorted order')."""

    requirement: str
    ok: bool
    explanation: str = ""


class ReviewVerdict(BaseModel):
    accept: bool
    reasons: list[ReviewReason] = Field(default_factory=list)
    outputs: dict[str, Any] = Field(default_factory=dict, description="Transcript or raw output (JSON), kept.")

    def objections(self) -> list[ReviewReason]:
        """The reasons that failed (all of them when a rejection names none as failed)."""
        failed = [r for r in self.reasons if not r.ok]
        return failed or ([] if self.accept else self.reasons)


REPAIR_PROBE = "repair"
"""Ledger probe of a round's result: on the version the round made, or (when it made none) on the
version it started from; attempt = round number."""
UNRESOLVED_PROBE = "unresolved"
"""Ledger probe of the result that says why a task stayed unresolved (on the original, attempt = rounds)."""


class RoundOutcome(StrEnum):
    ACCEPTED = "accepted"
    """The fresh audit is clean (of the codes attempted, and nothing new) and the reviewer, if any, accepts."""
    AUDIT_FAILED = "audit_failed"
    """The fresh audit still finds (or newly finds) something; the next round starts from this version."""
    REVIEW_REJECTED = "review_rejected"
    """The fresh audit is clean but the reviewer rejects the repair."""
    INVALID = "invalid"
    """The repaired copy does not load as a task; the next round starts again from the version before."""
    UNCHANGED = "unchanged"
    """The repairer changed nothing (or only ignored files)."""
    KNOWN_VERSION = "known_version"
    """The repaired copy is a version recorded before (a revert): nothing new to audit."""
    GAVE_UP = "gave_up"
    """The repairer found nothing it can fix."""
    MODEL_FAILURE = "model_failure"
    """The repairer or reviewer failed with a qaflow error (a model call that failed for good, ...)."""
    REPAIR_ERROR = "repair_error"
    """The repairer or reviewer crashed (a bug; the traceback is kept), or it touched the original task."""


CONTINUE = frozenset({RoundOutcome.AUDIT_FAILED, RoundOutcome.REVIEW_REJECTED, RoundOutcome.INVALID,
                      RoundOutcome.UNCHANGED, RoundOutcome.KNOWN_VERSION})  # fmt: skip
"""Outcomes after which another round is tried (within the round limit)."""


class UnresolvedReason(StrEnum):
    ROUND_LIMIT = "round_limit"
    REVIEWER_REJECTED = "reviewer_rejected"
    GAVE_UP = "gave_up"
    MODEL_FAILURE = "model_failure"
    REPAIR_ERROR = "repair_error"

    @classmethod
    def after(cls, last: RoundOutcome) -> UnresolvedReason:
        """Why a chain whose last round ended with `last` is unresolved."""
        return {
            RoundOutcome.GAVE_UP: cls.GAVE_UP,
            RoundOutcome.MODEL_FAILURE: cls.MODEL_FAILURE,
            RoundOutcome.REPAIR_ERROR: cls.REPAIR_ERROR,
            RoundOutcome.REVIEW_REJECTED: cls.REVIEWER_REJECTED,
        }.get(last, cls.ROUND_LIMIT)


RETRYABLE = frozenset(
    {UnresolvedReason.ROUND_LIMIT, UnresolvedReason.REVIEWER_REJECTED, UnresolvedReason.MODEL_FAILURE}
)
"""Unresolved tasks a rerun tries again while rounds remain (a raised --max-rounds, a model back up)."""


class ReviewRecord(BaseModel):
    reviewer: str
    accept: bool
    reasons: list[ReviewReason] = Field(default_factory=list)
    outputs: dict[str, Any] = Field(default_factory=dict)


class RoundRecord(BaseModel):
    """One round, stored as the payload of its `repair` ledger result."""

    original: str = Field(description="The version being repaired (the chain's root).")
    round: int
    repairer: str
    from_version: str = Field(description="The version this round copied and edited.")
    version: str | None = Field(default=None, description="The version the round made, when it made one.")
    path: str | None = Field(default=None, description="Its folder, relative to the pool root.")
    summary: str = ""
    claimed_files: list[str] = Field(default_factory=list, description="Files the repairer says it changed.")
    changed_files: list[str] = Field(default_factory=list, description="Files that did change (from the diff).")
    outputs: dict[str, Any] = Field(default_factory=dict, description="The repairer's transcript or rules.")
    diff: str = Field(default="", description="Unified diff from_version -> version (capped).")
    findings_before: list[AuditFinding] = Field(default_factory=list, description="What the repairer was given.")
    findings_after: list[AuditFinding] = Field(default_factory=list, description="Fresh audit (+ review) findings.")
    findings_next: list[AuditFinding] = Field(default_factory=list, description="What the next round gets.")
    review: ReviewRecord | None = None
    outcome: RoundOutcome
    error: str | None = None
    next_from: str = Field(description="The version the next round starts from.")
    duration_s: float = 0.0


class TaskOutcome(StrEnum):
    ACCEPTED = "accepted"
    UNRESOLVED = "unresolved"
    SKIPPED = "skipped"
    """Nothing to attempt (no finding of the codes asked for)."""


class RepairRecord(BaseModel):
    """One task's repair, as written to `repairs.json` and `--json`."""

    task: str
    path: str = Field(description="The original's folder, relative to the pool root.")
    original_version: str
    final_version: str | None = Field(default=None, description="The accepted version, else the last one made.")
    final_path: str | None = Field(default=None, description="Its folder, relative to the pool root.")
    rounds: int = 0
    outcome: TaskOutcome
    reason: UnresolvedReason | None = None
    detail: str = ""
    codes_before: list[str] = Field(default_factory=list)
    codes_after: list[str] = Field(default_factory=list)
    resumed_rounds: int = Field(default=0, description="Rounds recorded by an earlier run and not redone.")
