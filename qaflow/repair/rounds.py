"""Repair rounds: copy -> repair -> fresh deterministic audit (+ reviewer) -> accept, or the next round.

For each task of the pool whose current version needs repair (audited first when it never was),
round k copies the version it starts from to `out_dir/<task path>@<k>`, lets the repairer edit
the copy, records the copy as a new version (parent: the version it was made from, source
`repair:<repairer>`), audits it from scratch and, when the audit is clean, asks the reviewer.
Every round is a ledger result (probe `repair`, attempt = round) whose payload is a
`RoundRecord`: diff, findings before and after, both agents' outputs, outcome. Original folders
are never written. A rerun reads the recorded rounds and goes on from the next one.

`codes` limits what is attempted: only findings of those codes (and anything a repair newly
causes) are handed to the repairer, and a repair is accepted when the fresh audit has no error
finding besides the original's untargeted ones.
"""

from __future__ import annotations

import json
import traceback
from collections.abc import Callable, Collection
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from qaflow.audit.runner import AuditConfig, Auditor
from qaflow.executors import Executor
from qaflow.ledger.status import StatusWriter
from qaflow.models.records import FindingCode, Result, RunKind, TaskRow, VersionStatus
from qaflow.models.repair import (
    CONTINUE,
    RETRYABLE,
    UNRESOLVED_PROBE,
    RepairRecord,
    RoundOutcome,
    RoundRecord,
    TaskOutcome,
    UnresolvedReason,
)
from qaflow.models.trial import ExitStatus
from qaflow.pool import Pool
from qaflow.repair.base import Repairer, RepairError, Reviewer
from qaflow.repair.chain import chain_records, latest_findings, round_base, unresolved_note
from qaflow.repair.step import Chain, RoundRunner, labels
from qaflow.runs import open_run

ProgressFn = Callable[[str], None]
CANDIDATES = frozenset(
    {VersionStatus.NEW, VersionStatus.NEEDS_REPAIR, VersionStatus.UNRESOLVED, VersionStatus.REPAIRED}
)
REPAIRS_JSON = "repairs.json"


def check_out_dir(pool: Pool, out_dir: Path) -> Path:
    """The resolved output folder, refused where a pool scan would take repaired copies for tasks.

    Raises:
        RepairError: `out_dir` is the pool, inside a task folder, or inside the pool but not under a
            hidden folder (the default POOL/.qaflow/repaired is fine).
    """
    out = Path(out_dir).resolve()
    if out == pool.root:
        raise RepairError(out, "the output folder cannot be the pool itself; use POOL/.qaflow/repaired")
    for task_dir in pool.discover():
        if out == task_dir or task_dir in out.parents:
            raise RepairError(out, f"the output folder is inside the task folder {task_dir}")
    if pool.root in out.parents and not any(p.startswith(".") for p in out.relative_to(pool.root).parts):
        raise RepairError(
            out, "inside the pool but not under a hidden folder, so a pool scan would take the repaired copies "
            "for pool tasks; use a hidden folder (POOL/.qaflow/repaired) or one outside the pool",
        )  # fmt: skip
    return out


def repair_pool(
    pool: Pool,
    *,
    repairer: Repairer,
    reviewer: Reviewer | None = None,
    audit_config: AuditConfig,
    out_dir: Path,
    max_rounds: int = 3,
    codes: Collection[FindingCode] | None = None,
    progress: ProgressFn | None = None,
    executor: Executor | None = None,
) -> list[RepairRecord]:
    """Repair every task of `pool` that needs it; one record per task, also written to `out_dir/repairs.json`.

    The audits' trials run on `executor` (default: local threads, `audit_config.jobs` at once); the
    repairers and reviewers run here, and only this process writes the ledger.

    Raises:
        RepairError: a bad `out_dir` or `max_rounds`.
        SandboxUnavailableError: no sandbox backend can run the audits.
    """
    if max_rounds < 1:
        raise RepairError(pool.root, f"max_rounds must be at least 1, not {max_rounds}")
    out = check_out_dir(pool, out_dir)
    config = {
        "repairer": repairer.name,
        "reviewer": reviewer.name if reviewer else None,
        "max_rounds": max_rounds,
        "codes": sorted(c.value for c in codes) if codes is not None else None,
        "out_dir": str(out),
        "audit": audit_config.model_dump(mode="json"),
    }
    with open_run(pool.ledger, RunKind.REPAIR, config) as run:
        pool.scan()
        auditor = Auditor(pool.ledger, run.run_id, audit_config, executor=executor, pool=pool)
        try:
            session = _Session(pool, auditor, repairer, reviewer, out, max_rounds, codes, progress)
            heads = list({row.version: row for row in reversed(pool.list()) if row.status in CANDIDATES}.values())
            heads.sort(key=lambda r: r.path)
            with ThreadPoolExecutor(audit_config.jobs, thread_name_prefix="qaflow-repair") as tasks:
                records = [r for r in tasks.map(session.repair_task, heads) if r is not None]
        finally:
            auditor.close()
    out.mkdir(parents=True, exist_ok=True)
    (out / REPAIRS_JSON).write_text(
        json.dumps([r.model_dump(mode="json") for r in records], indent=2) + "\n", encoding="utf-8"
    )
    return records


class _Session:
    def __init__(
        self,
        pool: Pool,
        auditor: Auditor,
        repairer: Repairer,
        reviewer: Reviewer | None,
        out_dir: Path,
        max_rounds: int,
        codes: Collection[FindingCode] | None,
        progress: ProgressFn | None,
    ):
        self.pool, self.ledger, self.auditor = pool, pool.ledger, auditor
        self.rounds = RoundRunner(pool, auditor, repairer, reviewer, out_dir)
        self.max_rounds, self.codes = max_rounds, codes
        self.progress = progress or (lambda _msg: None)

    # -- one task ---------------------------------------------------------------------------

    def repair_task(self, row: TaskRow) -> RepairRecord | None:
        """One task's chain; an unexpected failure is reported for this task and the pool goes on."""
        try:
            return self._repair_task(row)
        except Exception as e:
            self.progress(f"{row.name}: repair failed: {type(e).__name__}: {e}")
            return RepairRecord(
                task=row.name, path=row.path, original_version=row.version, outcome=TaskOutcome.UNRESOLVED,
                reason=UnresolvedReason.REPAIR_ERROR, detail="".join(traceback.format_exception(e))[-2000:],
            )  # fmt: skip

    def _repair_task(self, row: TaskRow) -> RepairRecord | None:
        status = row.status
        if status is VersionStatus.NEW:
            audit = self.auditor.audit_one(self.pool.root / row.path)
            self.progress(f"{row.name}: audited, {audit.verdict.value}")
            version = self.ledger.get_version(row.version)
            status = version.status if version else status
        if status not in (VersionStatus.NEEDS_REPAIR, VersionStatus.UNRESOLVED, VersionStatus.REPAIRED):
            return None
        chain = Chain(row, latest_findings(self.ledger, row.version), self.codes)
        chain.rounds = chain_records(self.ledger, row.version)
        resumed = len(chain.rounds)
        accepted = next((r for r in chain.rounds if r.outcome is RoundOutcome.ACCEPTED), None)
        if accepted is not None:
            return self._accepted(chain, accepted, resumed)
        if status is VersionStatus.REPAIRED:
            return None  # repaired outside these rounds
        if not chain.targeted:
            return self._record(chain, TaskOutcome.SKIPPED, detail="no error finding of the codes asked for")
        last = chain.rounds[-1] if chain.rounds else None
        if last is not None and status is VersionStatus.UNRESOLVED:
            reason, _ = unresolved_note(self.ledger, row.version, len(chain.rounds))
            if reason not in RETRYABLE or len(chain.rounds) >= self.max_rounds:
                return self._unresolved(chain, resumed)
        elif last is not None and last.outcome not in CONTINUE:
            return self._unresolved(chain, resumed)  # stopped before its status was written
        if last is None:
            start, findings = row.version, [f for f in chain.findings if chain.allowed(f)]
        else:
            start, findings = last.next_from, last.findings_next
        base = round_base(self.ledger, row.version)
        while len(chain.rounds) < self.max_rounds:
            record = self.rounds.run(chain, start, findings, base + len(chain.rounds) + 1)
            chain.rounds.append(record)
            self.progress(f"{row.name}: round {record.round} {record.outcome.value}")
            if record.outcome is RoundOutcome.ACCEPTED:
                return self._accepted(chain, record, resumed)
            if record.outcome not in CONTINUE:
                break
            start, findings = record.next_from, record.findings_next
        return self._unresolved(chain, resumed)

    # -- endings ----------------------------------------------------------------------------

    def _accepted(self, chain: Chain, rec: RoundRecord, resumed: int) -> RepairRecord:
        assert rec.version is not None
        for other in chain.rounds:
            if other.version and other.version != rec.version:
                known = self.ledger.get_version(other.version)
                if known is not None and known.status is VersionStatus.NEEDS_REPAIR:
                    self.ledger.set_status(
                        other.version,
                        VersionStatus.REPAIRED,
                        by=StatusWriter.REPAIR,
                        reason=f"repair: superseded by {rec.version[:12]}",
                    )
        self.ledger.set_status(
            chain.original,
            VersionStatus.REPAIRED,
            by=StatusWriter.REPAIR,
            reason=f"repair: accepted as {rec.version[:12]} in round {rec.round} ({rec.repairer})",
            run_id=self.auditor.run_id,
        )
        after = labels(rec.findings_after)
        return self._record(chain, TaskOutcome.ACCEPTED, final=rec, codes_after=after, resumed=resumed)

    def _unresolved(self, chain: Chain, resumed: int) -> RepairRecord:
        last = chain.rounds[-1]
        n = len(chain.rounds)
        reason, detail = unresolved_note(self.ledger, chain.original, n)
        made = next((r for r in reversed(chain.rounds) if r.version), None)
        if last.outcome in (RoundOutcome.AUDIT_FAILED, RoundOutcome.REVIEW_REJECTED):
            after = labels(last.findings_after)
        else:  # nothing new was audited: what the version the round started from still has
            parent = next((r for r in chain.rounds if r.version == last.from_version), None)
            after = labels(parent.findings_after) if parent else sorted(c.value for c in chain.before)
        if reason is None:
            reason = UnresolvedReason.after(last.outcome)
            why = last.error or (last.summary if last.outcome is RoundOutcome.GAVE_UP else "")
            detail = f"after {n} round(s), the last {last.outcome.value}" + (f": {why}" if why else "")
            self.ledger.put_result(
                Result(
                    task_version=chain.original, probe=UNRESOLVED_PROBE, attempt=n, run_id=self.auditor.run_id,
                    backend=self.auditor.backend, status=ExitStatus.ERROR,
                    payload={"reason": reason.value, "detail": detail, "rounds": n, "remaining": after,
                             "last_version": made.version if made else None},
                )
            )  # fmt: skip
        self.ledger.set_status(
            chain.original, VersionStatus.UNRESOLVED, by=StatusWriter.REPAIR,
            reason=f"repair: {reason.value}: {detail}"[:1000], run_id=self.auditor.run_id,
        )  # fmt: skip
        return self._record(
            chain, TaskOutcome.UNRESOLVED, final=made, reason=reason, detail=detail, codes_after=after, resumed=resumed
        )

    def _record(
        self,
        chain: Chain,
        outcome: TaskOutcome,
        *,
        final: RoundRecord | None = None,
        reason: UnresolvedReason | None = None,
        detail: str = "",
        codes_after: list[str] | None = None,
        resumed: int = 0,
    ) -> RepairRecord:
        before = sorted(c.value for c in chain.before)
        return RepairRecord(
            task=chain.row.name,
            path=chain.row.path,
            original_version=chain.original,
            final_version=final.version if final else None,
            final_path=final.path if final else None,
            rounds=len(chain.rounds),
            outcome=outcome,
            reason=reason,
            detail=detail,
            codes_before=before,
            codes_after=before if codes_after is None else codes_after,
            resumed_rounds=resumed,
        )
