"""Audit task folders of a pool inside one recorded run: what `qaflow audit`, the pipeline and
augmentation all call, so that each reaps crashed audit runs first and records the run the same way."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

from qaflow import interrupts
from qaflow.audit.runner import AuditConfig, Auditor, ProgressFn
from qaflow.executors import Executor
from qaflow.ledger.lock import run_lock
from qaflow.models.audit import TaskAudit
from qaflow.models.records import RunKind
from qaflow.runs import Reaped, open_run
from qaflow.sandbox import backend_class

if TYPE_CHECKING:
    from qaflow.pool import Pool


class AuditBatch(BaseModel):
    """The audits of one call, with the run they were recorded under and the backend that ran them."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    audits: list[TaskAudit]
    run_id: str | None
    """None when there was nothing to audit (no run is recorded then)."""
    backend: str


def audit_folders(
    pool: Pool,
    folders: list[Path],
    config: AuditConfig,
    *,
    executor: Executor | None = None,
    progress: ProgressFn | None = None,
    on_reaped: Reaped | None = None,
    scan: bool = True,
) -> AuditBatch:
    """Audit `folders` of `pool` (scanned first unless `scan=False`) in a new audit run, crashed audit
    runs reaped first. With no folders nothing is recorded; nothing is written (scan, run, status)
    before the backend's name is checked and the pool's run lock is held.

    Raises:
        Interrupted: a stop was requested (`qaflow.interrupts`); it carries the finished audits, the run id
            and how many results the run recorded.
        SandboxUnavailableError: no backend can run the audit (nothing is audited; the run is closed), or
            the backend's name is unknown (nothing is recorded).
        PoolBusyError: another process holds the pool (nothing is recorded).
    """
    if not folders:
        return AuditBatch(audits=[], run_id=None, backend=config.backend)
    check_backend_name(config.backend)
    with run_lock(pool.ledger.path, RunKind.AUDIT.value):
        if scan:
            pool.scan()
        return _audit_in_run(pool, folders, config, executor=executor, progress=progress, on_reaped=on_reaped)


def check_backend_name(backend: str) -> None:
    """Raises SandboxUnavailableError for a backend name no backend is registered under (`auto` is one)."""
    if backend.partition(":")[0] != "auto":
        backend_class(backend)


def _audit_in_run(
    pool: Pool,
    folders: list[Path],
    config: AuditConfig,
    *,
    executor: Executor | None,
    progress: ProgressFn | None,
    on_reaped: Reaped | None,
) -> AuditBatch:
    with open_run(pool.ledger, RunKind.AUDIT, config, on_reaped=on_reaped) as run:
        auditor = Auditor(pool.ledger, run.run_id, config, progress=progress, executor=executor, pool=pool)
        try:
            audits = auditor.audit(folders)
        except interrupts.Interrupted as e:
            e.run_id, e.recorded = run.run_id, len(pool.ledger.results(run_id=run.run_id))
            raise
        finally:
            auditor.close()
        return AuditBatch(audits=audits, run_id=run.run_id, backend=auditor.backend)
