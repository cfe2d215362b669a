"""What the audit writes to and reads back from the ledger beside its trials: a task's audit (its row in
`audits`, findings and status), and which recorded trials are reused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from qaflow.audit.infra import sandbox_failed
from qaflow.audit.judge import effect_lost
from qaflow.audit.probe_run import ProbeRun
from qaflow.ledger import Ledger
from qaflow.models.audit import AuditRecord, TaskAudit
from qaflow.models.records import Finding, Severity
from qaflow.task import Task


def record_audit(ledger: Ledger, run_id: str, task: Task, audit: TaskAudit) -> None:
    """Record `audit` of `task` (a version the ledger knows; others are left alone) under `run_id`."""
    if ledger.get_version(task.version) is None:
        return
    findings = [
        Finding(task_version=task.version, run_id=run_id, code=f.code, severity=f.severity, message=f.message,
                evidence=f.evidence)
        for f in audit.findings
    ]  # fmt: skip
    codes = sorted({f.code.value for f in audit.findings if f.severity is Severity.ERROR})
    record = AuditRecord(
        task_version=task.version, run_id=run_id, verdict=audit.verdict, codes=codes, harness=observed_holes(audit)
    )
    ledger.record_audit(record, findings)


def observed_holes(audit: TaskAudit) -> list[str] | None:
    """The harness holes the audit's observe probe saw its verifier has; None where it observed nothing."""
    observed = audit.probes.get("observe")
    if not isinstance(observed, dict):
        return None
    note = observed.get("harness")
    holes = note.get("holes") if isinstance(note, dict) else None
    return sorted(holes) if isinstance(holes, dict) else []


def at_home(value: Any, task: Task) -> Any:
    """`value` (JSON data) with the path of the task's snapshot replaced by its folder's, so that messages,
    evidence and recorded results name the files the user has (a snapshot is gone after its audit)."""
    if task.origin is None or task.path == task.origin:
        return value
    copy, home = json.dumps(str(task.path))[1:-1], json.dumps(str(task.origin))[1:-1]
    return json.loads(json.dumps(value).replace(copy, home))


def failed_sandbox(run: ProbeRun) -> bool:
    """Whether a recorded trial's sandbox failed it (or lost the oracle's effect): it is run again, as rollouts
    redo infrastructure errors, instead of reused."""
    if run.effect is not None and effect_lost([run]):
        return True
    outputs = f"{run.agent_output}\n{run.verifier_output}"
    return not run.full and sandbox_failed(run.error_kind, run.error or "", outputs)


def relative(path: Path, folder: Path) -> str:
    """`path` relative to `folder` where it is inside it, else as given."""
    try:
        return str(Path(path).resolve().relative_to(folder.resolve()))
    except ValueError:
        return str(path)
