"""One repair round: copy the version it starts from, let the repairer edit the copy, record the
copy as a new version, audit it from scratch, ask the reviewer, and store the `RoundRecord`."""

from __future__ import annotations

import os
import shutil
import time
import traceback
from collections.abc import Callable, Collection
from pathlib import Path

from qaflow.audit.runner import Auditor
from qaflow.errors import QaflowError, TaskError
from qaflow.ledger.status import StatusWriter
from qaflow.models.audit import AuditFinding, TaskAudit
from qaflow.models.records import Finding, FindingCode, Result, Severity, TaskRow, VersionStatus
from qaflow.models.repair import REPAIR_PROBE, ReviewRecord, RoundOutcome, RoundRecord
from qaflow.models.trial import ExitStatus
from qaflow.pool import Pool
from qaflow.repair.base import Repairer, RepairError, Reviewer
from qaflow.repair.diff import folder_diff
from qaflow.task import Task, copy_task_folder, tree_hash

REVIEWER_KEY = "reviewer"
"""Evidence key of a reviewer's objection: a `lint` finding of severity error, shown as `review`."""


def errors(findings: list[AuditFinding]) -> set[FindingCode]:
    """The codes of the findings that make a verdict needs_repair."""
    return {f.code for f in findings if f.severity is Severity.ERROR}


def labels(findings: list[AuditFinding]) -> list[str]:
    """Error codes for people: a reviewer's objection shows as `review`."""
    return sorted(
        {"review" if REVIEWER_KEY in f.evidence else f.code.value for f in findings if f.severity is Severity.ERROR}
    )


class Chain:
    """One task's repair: its original, what is attempted, and the rounds so far."""

    def __init__(self, row: TaskRow, findings: list[AuditFinding], codes: Collection[FindingCode] | None):
        self.row = row
        self.findings = findings
        self.before = errors(findings)
        self.targeted = self.before if codes is None else self.before & set(codes)
        self.untouched = self.before - self.targeted
        seen = {f.code for f in findings}
        self.allowed: Callable[[AuditFinding], bool] = lambda f: (
            codes is None or f.code in codes or f.code not in seen or REVIEWER_KEY in f.evidence
        )
        self.rounds: list[RoundRecord] = []

    @property
    def original(self) -> str:
        return self.row.version


class RoundRunner:
    """Runs rounds for any chain of one pool, recording into its ledger under the auditor's run."""

    def __init__(self, pool: Pool, auditor: Auditor, repairer: Repairer, reviewer: Reviewer | None, out_dir: Path):
        self.pool, self.ledger, self.auditor = pool, pool.ledger, auditor
        self.repairer, self.reviewer, self.out_dir = repairer, reviewer, out_dir

    def _folder(self, version: str, chain: Chain) -> Path:
        if version == chain.original:
            return self.pool.root / chain.row.path
        record = self.ledger.get_version(version)
        if record is None:
            raise RepairError(self.ledger.path, f"version {version[:12]} of {chain.row.name} is not recorded")
        return (self.pool.root / record.path).resolve()

    def _rel(self, folder: Path) -> str:
        return Path(os.path.relpath(folder, self.pool.root)).as_posix()

    def run(self, chain: Chain, start: str, findings: list[AuditFinding], k: int) -> RoundRecord:
        """Round `k` of `chain`, starting from version `start` with `findings` to fix."""
        t0 = time.perf_counter()
        source, original_dir = self._folder(start, chain), self.pool.root / chain.row.path
        work = self.out_dir / f"{chain.row.path}@{k}"
        rec = RoundRecord(
            original=chain.original, round=k, repairer=self.repairer.name, from_version=start,
            findings_before=findings, findings_next=findings, outcome=RoundOutcome.UNCHANGED, next_from=start,
        )  # fmt: skip
        if not (source / "task.toml").is_file():
            rec.outcome, rec.error = RoundOutcome.REPAIR_ERROR, f"{source}: the folder of version {start[:12]} is gone"
            return self._store(chain, rec, t0)
        copy_task_folder(source, work)  # a round that crashed before it was recorded is redone
        guard = {p: tree_hash(p) for p in {source, original_dir}}
        try:
            outcome = self.repairer.repair(Task.load(work), work, list(findings), k)
        except Exception as e:
            return self._store(chain, _failed(rec, e), t0)
        rec.summary, rec.claimed_files, rec.outputs = outcome.summary, outcome.changed_files, outcome.outputs
        touched = sorted(str(p) for p, h in guard.items() if tree_hash(p) != h)
        if touched:
            rec.outcome, rec.error = RoundOutcome.REPAIR_ERROR, f"the repairer modified {', '.join(touched)}"
            return self._store(chain, rec, t0)
        rec.diff, rec.changed_files = folder_diff(source, work)
        if outcome.gave_up or not rec.changed_files:
            rec.outcome = RoundOutcome.GAVE_UP if outcome.gave_up else RoundOutcome.UNCHANGED
            return self._store(chain, rec, t0)
        return self._store(chain, self._judge(chain, rec, work), t0)

    def _judge(self, chain: Chain, rec: RoundRecord, work: Path) -> RoundRecord:
        version = tree_hash(work)
        known = self.ledger.get_version(version)
        source = f"repair:{self.repairer.name}"
        if known is not None and not (known.parent_version == rec.from_version and known.source == source):
            rec.outcome, rec.error = RoundOutcome.KNOWN_VERSION, f"same files as version {known.short} ({known.path})"
            return rec
        rec.version, rec.path = version, self._rel(work)
        try:
            repaired = Task.load(work)
        except TaskError as e:
            where = _inside(e.path, work)
            error = f"{where}: {e.reason}"
            if known is None:
                self._add_version(chain, rec, VersionStatus.INVALID, error)
            invalid = AuditFinding(
                code=FindingCode.INVALID_TASK,
                message=f"the repaired copy does not load: {error}",
                evidence={"file": where, "reason": e.reason},
            )
            rec.outcome, rec.error, rec.findings_after = RoundOutcome.INVALID, error, [invalid]
            rec.findings_next = [*rec.findings_before, invalid]
            return rec
        if known is None:
            self._add_version(chain, rec, VersionStatus.NEW, None)
        audit = self.auditor.audit_one(work)
        rec.findings_after = list(audit.findings)
        clean = not (errors(audit.findings) - chain.untouched)
        if clean and self.reviewer is not None:
            try:
                self._review(chain, rec, repaired, audit)
            except Exception as e:
                # unreviewed is not accepted; a retry redoes the round (the same files are adopted)
                self.ledger.set_status(
                    version,
                    VersionStatus.NEEDS_REPAIR,
                    by=StatusWriter.REPAIR,
                    reason=f"review: could not run: {type(e).__name__}: {e}"[:500],
                )
                return _failed(rec, e)
        rejected = rec.review is not None and not rec.review.accept
        rec.outcome = (
            RoundOutcome.AUDIT_FAILED if not clean
            else RoundOutcome.REVIEW_REJECTED if rejected
            else RoundOutcome.ACCEPTED
        )  # fmt: skip
        rec.next_from = version
        rec.findings_next = [f for f in rec.findings_after if chain.allowed(f)]
        return rec

    def _review(self, chain: Chain, rec: RoundRecord, repaired: Task, audit: TaskAudit) -> None:
        assert self.reviewer is not None and rec.version is not None
        original_dir = self.pool.root / chain.row.path
        diff, _ = folder_diff(original_dir, repaired.path)
        verdict = self.reviewer.review(Task.load(original_dir), repaired, diff, audit)
        rec.review = ReviewRecord(
            reviewer=self.reviewer.name, accept=verdict.accept, reasons=verdict.reasons, outputs=verdict.outputs
        )
        if verdict.accept:
            return
        objections = verdict.objections()
        name = self.reviewer.name
        found = [
            AuditFinding(
                code=FindingCode.LINT,
                message=f"review: {name} rejected the repair: {r.requirement}"
                + (f": {r.explanation}" if r.explanation else ""),
                evidence={REVIEWER_KEY: name, "requirement": r.requirement, "explanation": r.explanation},
            )
            for r in objections
        ] or [
            AuditFinding(
                code=FindingCode.LINT,
                message=f"review: {name} rejected the repair without naming a requirement",
                evidence={REVIEWER_KEY: name},
            )
        ]
        for f in found:
            self.ledger.add_finding(
                Finding(
                    task_version=rec.version, run_id=self.auditor.run_id, code=f.code,
                    severity=f.severity, message=f.message, evidence=f.evidence,
                )
            )  # fmt: skip
        rec.findings_after = [*rec.findings_after, *found]
        self.ledger.set_status(
            rec.version,
            VersionStatus.NEEDS_REPAIR,
            by=StatusWriter.REPAIR,
            reason=f"review: {self.reviewer.name} rejected: " + "; ".join(r.requirement for r in objections)[:500],
            run_id=self.auditor.run_id,
        )

    def _add_version(self, chain: Chain, rec: RoundRecord, status: VersionStatus, error: str | None) -> None:
        assert rec.version is not None and rec.path is not None
        self.ledger.add_derived(
            rec.version, name=chain.row.name, source=f"repair:{self.repairer.name}", parent=rec.from_version,
            path=rec.path, status=status, error=error,
            reason=f"repair: round {rec.round} of {chain.row.short} by {self.repairer.name}",
        )  # fmt: skip

    def _store(self, chain: Chain, rec: RoundRecord, t0: float) -> RoundRecord:
        rec.duration_s = time.perf_counter() - t0
        work = self.out_dir / f"{chain.row.path}@{rec.round}"
        if rec.version is None and work.is_dir():
            shutil.rmtree(work)  # no version was made from it: nothing in the ledger points here
        failed = rec.outcome in (RoundOutcome.MODEL_FAILURE, RoundOutcome.REPAIR_ERROR)
        self.ledger.put_result(
            Result(
                task_version=rec.version or rec.from_version,
                probe=REPAIR_PROBE,
                attempt=rec.round,
                run_id=self.auditor.run_id,
                backend=self.auditor.backend,
                status=ExitStatus.ERROR if failed else ExitStatus.OK,
                payload=rec.model_dump(mode="json"),
                duration_s=rec.duration_s,
            ),
            force=True,
        )
        return rec


def _inside(path: Path, folder: Path) -> str:
    try:
        return path.resolve().relative_to(folder.resolve()).as_posix()
    except ValueError:
        return str(path)


def _failed(rec: RoundRecord, error: Exception) -> RoundRecord:
    """A repairer or reviewer that raised: a qaflow error is a model failure, anything else a bug."""
    if isinstance(error, QaflowError):
        rec.outcome, rec.error = RoundOutcome.MODEL_FAILURE, f"{type(error).__name__}: {error}"
    else:
        rec.outcome = RoundOutcome.REPAIR_ERROR
        rec.error = "".join(traceback.format_exception(error))[-4000:]
    return rec
