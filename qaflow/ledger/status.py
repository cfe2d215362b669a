"""Who may move a task version's status, and where to (docs/contracts.md, "Task status").

The ledger is the one owner of status: every change goes through `Ledger.set_status`, which checks it
against `TRANSITIONS` for the step asking (`StatusWriter`) and refuses any other with a `LedgerError`.
The audit reports a verdict; `status_after_audit` turns it into a status, so the acceptance gate's
policy (a version a transform made is accepted only by `qaflow accept`) lives here and nowhere else.
"""

from __future__ import annotations

from enum import StrEnum

from qaflow.models.records import TaskVersion, VersionStatus

S = VersionStatus


class StatusWriter(StrEnum):
    """The steps that may change a version's status."""

    SCAN = "scan"
    """Loading a task folder: valid or not."""
    AUDIT = "audit"
    """The audit's verdict (`status_after_audit`)."""
    REPAIR = "repair"
    """Repair rounds: the original superseded or unresolved, a rejected repair sent back."""
    GATE = "gate"
    """`qaflow accept`: a candidate accepted on independent evidence, or kept a candidate."""
    PIPELINE = "pipeline"
    """`qaflow pipeline run` carrying statuses into the pool it writes (any status it recorded)."""


ANY: frozenset[VersionStatus] = frozenset(VersionStatus)
LOADED = ANY - {S.INVALID}
GATED_ORIGINS = frozenset({"harden"})
"""Versions made by these steps (`TaskVersion.origin`) are accepted only by the gate, never by an audit."""

TRANSITIONS: dict[StatusWriter, dict[VersionStatus, frozenset[VersionStatus]]] = {
    StatusWriter.SCAN: {**{s: frozenset({S.INVALID}) for s in ANY}, S.INVALID: frozenset({S.INVALID, S.NEW})},
    StatusWriter.AUDIT: {s: frozenset({S.ACCEPTED, S.NEEDS_REPAIR, S.CANDIDATE}) for s in LOADED - {S.RETIRED}},
    StatusWriter.REPAIR: {s: frozenset({S.NEEDS_REPAIR, S.REPAIRED, S.UNRESOLVED}) for s in LOADED - {S.RETIRED}},
    StatusWriter.GATE: {s: frozenset({S.ACCEPTED, S.CANDIDATE}) for s in LOADED - {S.RETIRED}},
    StatusWriter.PIPELINE: {s: ANY for s in ANY},
}
"""Allowed moves per writer: from-status -> to-statuses. Setting the status a version already has is
always allowed (a no-op); anything not listed is refused."""


def allowed(writer: StatusWriter, old: VersionStatus, new: VersionStatus) -> bool:
    """Whether `writer` may move a version from `old` to `new`."""
    return old == new or new in TRANSITIONS[writer].get(old, frozenset())


def status_after_audit(version: TaskVersion, clean: bool) -> VersionStatus:
    """The status an audit verdict gives `version`: a clean audit accepts it, unless a transform made it,
    in which case the clean audit is one piece of the gate's evidence and the version is a candidate."""
    if not clean:
        return S.NEEDS_REPAIR
    return S.CANDIDATE if version.origin in GATED_ORIGINS else S.ACCEPTED
