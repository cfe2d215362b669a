"""What the ledger already knows about a repair chain: its recorded rounds, the findings a version's
latest assessment left, why a chain stayed unresolved. Read-only; `rounds` writes."""

from __future__ import annotations

from qaflow.ledger import Ledger
from qaflow.models.audit import AuditFinding
from qaflow.models.records import ResultKey, RunKind
from qaflow.models.repair import REPAIR_PROBE, UNRESOLVED_PROBE, RoundRecord, UnresolvedReason

ASSESSING_RUNS = frozenset({RunKind.AUDIT, RunKind.REPAIR})
"""Runs whose findings are an audit of the version (advisory findings of other runs, e.g. `qaflow
review`, are not what a repair round targets)."""


def latest_findings(ledger: Ledger, version: str) -> list[AuditFinding]:
    """The findings of the last audit or repair run that recorded any for `version` (its latest
    audit, with the reviewer's objections when it was a repair round)."""
    rows = ledger.findings(task_version=version)
    kinds: dict[str, RunKind | None] = {}
    for f in rows:
        if f.run_id not in kinds:
            run = ledger.get_run(f.run_id)
            kinds[f.run_id] = run.kind if run else None
    assessed = [f for f in rows if kinds[f.run_id] in ASSESSING_RUNS]
    if not assessed:
        return []
    last_run = assessed[-1].run_id
    return [
        AuditFinding(code=f.code, severity=f.severity, message=f.message, evidence=f.evidence)
        for f in assessed
        if f.run_id == last_run
    ]


def chain_records(ledger: Ledger, original: str) -> list[RoundRecord]:
    """Every round recorded for the chain rooted at `original`, in round order."""
    records = []
    for version in ledger.lineage(original):
        for result in ledger.results(task_version=version.version):
            if result.probe != REPAIR_PROBE or result.payload.get("original") != original:
                continue
            records.append(RoundRecord.model_validate(result.payload))
    return sorted(records, key=lambda r: r.round)


def round_base(ledger: Ledger, original: str) -> int:
    """Rounds of `original`'s own chain are numbered after the round that made `original` (when it
    is itself a repair), so their ledger keys never collide with that round's."""
    own = [
        r.attempt
        for r in ledger.results(task_version=original)
        if r.probe == REPAIR_PROBE and r.payload.get("original") != original
    ]
    return max(own, default=0)


def unresolved_note(ledger: Ledger, original: str, rounds: int) -> tuple[UnresolvedReason | None, str]:
    """(reason, detail) recorded when the chain stopped after `rounds` rounds, if it was recorded."""
    result = ledger.get_result(ResultKey(task_version=original, probe=UNRESOLVED_PROBE, attempt=rounds))
    if result is None:
        return None, ""
    return UnresolvedReason(result.payload["reason"]), str(result.payload.get("detail", ""))
