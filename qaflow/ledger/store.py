"""The ledger: a SQLite (WAL) store of task versions, runs, results, findings and audits.

Append-only in spirit: rows are inserted; a version's status changes only through
`set_status`, which also appends to `status_log`. Work items are keyed
`(task_version, probe, attempt)` so repeated work is found (`has_result`, `pending`) and
skipped, which is what makes long runs resumable.

The plumbing (connections, transactions, migrations, frames) is `qaflow.ledger.db.LedgerDB`.
"""

from __future__ import annotations

import json
import socket
import sqlite3
import uuid
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from pydantic import BaseModel

from qaflow.ledger.db import LedgerDB, LedgerError, to_json, ts, where
from qaflow.ledger.lock import run_lock
from qaflow.ledger.rollouts import RolloutLedger
from qaflow.ledger.status import StatusWriter, allowed, status_after_audit
from qaflow.models.audit import AuditRecord, Verdict
from qaflow.models.records import (
    Finding,
    Head,
    Result,
    ResultKey,
    Run,
    RunKind,
    StatusChange,
    TaskRow,
    TaskVersion,
    VersionStatus,
    utcnow,
)

__all__ = ["Ledger", "LedgerError"]

_CHUNK = 500
"""Host parameters per `IN (...)` query (SQLite's limit is far above this)."""


class Ledger(RolloutLedger, LedgerDB):
    """The ledger of a pool: task versions and their status, pool heads, runs, results, findings, rollouts."""

    # -- task versions --------------------------------------------------------------------

    def add_version(self, record: TaskVersion, *, reason: str = "recorded") -> TaskVersion:
        """Insert a new task version (its first status goes to `status_log` too).

        Raises:
            LedgerError: the version is already recorded, or its parent is unknown.
        """
        with self.transaction() as conn:
            if self.get_version(record.version) is not None:
                raise LedgerError(self.path, f"task version {record.short} is already recorded")
            if record.parent_version and self.get_version(record.parent_version) is None:
                raise LedgerError(self.path, f"parent version {record.parent_version[:12]} is not recorded")
            conn.execute(
                "INSERT INTO task_versions(version, name, source, parent_version, path, status, error, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    record.version,
                    record.name,
                    record.source,
                    record.parent_version,
                    record.path,
                    record.status.value,
                    record.error,
                    ts(record.created_at),
                ),
            )
            self._log_status(conn, record.version, None, record.status, reason, None)
        return record

    def add_derived(
        self,
        version: str,
        *,
        name: str,
        source: str,
        parent: str,
        path: str,
        reason: str,
        status: VersionStatus = VersionStatus.NEW,
        error: str | None = None,
    ) -> TaskVersion:
        """Record a version made from the recorded version `parent` (by a repair round, a hardening transform):
        `source` says what made it (`repair:<repairer>`, `harden:<transform>`), `reason` goes to `status_log`.

        Raises:
            LedgerError: as `add_version`.
        """
        record = TaskVersion(
            version=version, name=name, source=source, parent_version=parent, path=path, status=status,
            error=error, created_at=utcnow(),
        )  # fmt: skip
        return self.add_version(record, reason=reason)

    def get_version(self, version: str) -> TaskVersion | None:
        row = self._reader().execute("SELECT * FROM task_versions WHERE version = ?", (version,)).fetchone()
        return TaskVersion.model_validate(dict(row)) if row else None

    def find_versions(self, prefix: str) -> list[TaskVersion]:
        """Versions whose id starts with `prefix` (for short ids typed by people)."""
        rows = self._reader().execute(
            "SELECT * FROM task_versions WHERE version LIKE ? || '%' ORDER BY rowid", (prefix.lower(),)
        )
        return [TaskVersion.model_validate(dict(r)) for r in rows]

    def versions(self, *, name: str | None = None, status: VersionStatus | None = None) -> list[TaskVersion]:
        """Task versions in the order they were recorded, optionally filtered."""
        clause, args = where(name=name, status=status.value if status is not None else None)
        rows = self._reader().execute("SELECT * FROM task_versions" + clause + " ORDER BY rowid", args)
        return [TaskVersion.model_validate(dict(r)) for r in rows]

    def latest_version(self, name: str) -> TaskVersion | None:
        """The most recently recorded version of a task name."""
        row = (
            self._reader()
            .execute("SELECT * FROM task_versions WHERE name = ? ORDER BY rowid DESC LIMIT 1", (name,))
            .fetchone()
        )
        return TaskVersion.model_validate(dict(row)) if row else None

    def lineage(self, version: str) -> list[TaskVersion]:
        """Every version connected to `version` through parent links (ancestors and descendants), oldest first."""
        rows = self._reader().execute(
            """
            WITH RECURSIVE
              up(v) AS (SELECT ? UNION SELECT t.parent_version FROM task_versions t JOIN up ON t.version = up.v
                        WHERE t.parent_version IS NOT NULL),
              down(v) AS (SELECT v FROM up UNION SELECT t.version FROM task_versions t JOIN down
                          ON t.parent_version = down.v)
            SELECT t.* FROM task_versions t WHERE t.version IN (SELECT v FROM down) ORDER BY t.rowid
            """,
            (version,),
        )
        return [TaskVersion.model_validate(dict(r)) for r in rows]

    def set_status(
        self,
        version: str,
        status: VersionStatus,
        *,
        by: StatusWriter,
        reason: str,
        run_id: str | None = None,
        error: str | None = None,
    ) -> TaskVersion:
        """Change a version's status, recording why in `status_log`. Setting the same status is a no-op.

        `by` is the step asking; a move `qaflow.ledger.status.TRANSITIONS` does not allow it is refused.
        `error` replaces the stored error text; without it an `invalid` version keeps its error and
        any other status clears it.

        Raises:
            LedgerError: an unknown version, or a transition `by` may not make.
        """
        with self.transaction() as conn:
            current = self.get_version(version)
            if current is None:
                raise LedgerError(self.path, f"unknown task version {version[:12]}")
            if not allowed(by, current.status, status):
                raise LedgerError(
                    self.path,
                    f"{by.value} may not move {version[:12]} from {current.status.value} to {status.value}",
                )
            if error is None:
                error = current.error if status == VersionStatus.INVALID else None
            if current.status == status and current.error == error:
                return current
            conn.execute(
                "UPDATE task_versions SET status = ?, error = ? WHERE version = ?", (status.value, error, version)
            )
            self._log_status(conn, version, current.status, status, reason, run_id)
        return current.model_copy(update={"status": status, "error": error})

    def record_verdict(self, version: str, *, clean: bool, reason: str, run_id: str | None = None) -> TaskVersion:
        """Record an audit's verdict on `version` as its status (`qaflow.ledger.status.status_after_audit`).

        Raises:
            LedgerError: an unknown version, or one whose status an audit may not change (retired, invalid).
        """
        current = self.get_version(version)
        if current is None:
            raise LedgerError(self.path, f"unknown task version {version[:12]}")
        status = status_after_audit(current, clean)
        return self.set_status(version, status, by=StatusWriter.AUDIT, reason=reason, run_id=run_id)

    def record_audit(self, audit: AuditRecord, findings: Sequence[Finding] = ()) -> TaskVersion:
        """An audit of `audit.task_version`: its row in `audits`, its `findings` and its verdict as the version's
        status (`record_verdict`, the reason naming its codes), in one transaction: a process killed between
        them, or a verdict refused, leaves none of them.

        Raises:
            LedgerError: as `record_verdict` (nothing is recorded then).
        """
        with self.transaction():
            self.add_audit(audit)
            for finding in findings:
                self.add_finding(finding)
            return self.record_verdict(
                audit.task_version,
                clean=audit.verdict is Verdict.ACCEPTED,
                reason=f"audit: {audit.summary}",
                run_id=audit.run_id,
            )

    def add_audit(self, audit: AuditRecord) -> AuditRecord:
        """Keep `audit` in `audits` alone (no status, no findings): an audit carried over from another ledger."""
        with self.transaction() as conn:
            cursor = conn.execute(
                "INSERT INTO audits(task_version, run_id, verdict, codes_json, harness_json, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?)",
                (
                    audit.task_version,
                    audit.run_id,
                    audit.verdict.value,
                    to_json(audit.codes),
                    None if audit.harness is None else to_json(audit.harness),
                    ts(audit.created_at),
                ),
            )
        return audit.model_copy(update={"id": cursor.lastrowid})

    def audits(self, *, task_version: str | None = None, run_id: str | None = None) -> list[AuditRecord]:
        """Recorded audits, oldest first."""
        clause, args = where(task_version=task_version, run_id=run_id)
        return [_audit(r) for r in self._reader().execute("SELECT * FROM audits" + clause + " ORDER BY id", args)]

    def latest_audits(self) -> dict[str, AuditRecord]:
        """The latest recorded audit of each task version audited."""
        return {a.task_version: a for a in self.audits()}

    def _log_status(
        self,
        conn: sqlite3.Connection,
        version: str,
        old: VersionStatus | None,
        new: VersionStatus,
        reason: str,
        run_id: str | None,
    ) -> None:
        conn.execute(
            "INSERT INTO status_log(version, old_status, new_status, reason, run_id, created_at)"
            " VALUES (?, ?, ?, ?, ?, ?)",
            (version, old.value if old else None, new.value, reason, run_id, ts(utcnow())),
        )

    def status_log(self, version: str | None = None) -> list[StatusChange]:
        clause, args = where(version=version)
        rows = self._reader().execute("SELECT * FROM status_log" + clause + " ORDER BY id", args)
        return [StatusChange.model_validate(dict(r)) for r in rows]

    # -- heads: what a pool holds now -----------------------------------------------------

    def set_head(self, path: str, version: str) -> Head:
        """Record that pool path `path` now holds `version`."""
        head = Head(path=path, version=version, seen_at=utcnow())
        with self.transaction() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO heads(path, version, seen_at) VALUES (?, ?, ?)",
                (head.path, head.version, ts(head.seen_at)),
            )
        return head

    def remove_head(self, path: str) -> None:
        """The pool no longer holds a task at `path` (its versions stay recorded)."""
        with self.transaction() as conn:
            conn.execute("DELETE FROM heads WHERE path = ?", (path,))

    def tasks(self, status: VersionStatus | None = None) -> list[TaskRow]:
        """The `tasks` view: each pool path with its current version, ordered by name."""
        clause, args = where(status=status.value if status is not None else None)
        rows = self._reader().execute("SELECT * FROM tasks" + clause + " ORDER BY name, path", args)
        return [TaskRow.model_validate(dict(r)) for r in rows]

    def heads(self) -> list[Head]:
        rows = self._reader().execute("SELECT * FROM heads ORDER BY path")
        return [Head.model_validate(dict(r)) for r in rows]

    # -- runs -----------------------------------------------------------------------------

    def start_run(self, kind: RunKind, config: BaseModel | dict[str, Any] | None = None) -> Run:
        started = utcnow()
        run = Run(
            run_id=f"{kind.value}-{started:%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:8]}",
            kind=kind,
            started_at=started,
            config=json.loads(to_json(config or {})),
            host=socket.gethostname(),
        )
        with self.transaction() as conn:
            conn.execute(
                "INSERT INTO runs(run_id, kind, started_at, ended_at, config_json, host) VALUES (?, ?, ?, NULL, ?, ?)",
                (run.run_id, run.kind.value, ts(run.started_at), to_json(run.config), run.host),
            )
        return run

    @contextmanager
    def run(self, kind: RunKind, config: BaseModel | dict[str, Any] | None = None) -> Iterator[Run]:
        """`with ledger.run(kind, config) as run:` a run recorded as started, and as ended when the block
        ends, however it ends. (A process killed inside it leaves the run open: `qaflow.runs` reaps it.)
        The pool's run lock (`qaflow.ledger.lock`) is held meanwhile.

        Raises:
            PoolBusyError: another process has a run open on this pool; nothing is recorded.
        """
        with run_lock(self.path, kind.value):
            run = self.start_run(kind, config)
            try:
                yield run
            finally:
                self.end_run(run.run_id)

    def end_run(self, run_id: str) -> Run:
        with self.transaction() as conn:
            conn.execute("UPDATE runs SET ended_at = ? WHERE run_id = ? AND ended_at IS NULL", (ts(utcnow()), run_id))
            run = self.get_run(run_id)
        if run is None:
            raise LedgerError(self.path, f"unknown run {run_id!r}")
        return run

    def get_run(self, run_id: str) -> Run | None:
        row = self._reader().execute("SELECT * FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        return _run(row) if row else None

    def runs(self, kind: RunKind | None = None) -> list[Run]:
        clause, args = where(kind=kind.value if kind is not None else None)
        return [_run(r) for r in self._reader().execute("SELECT * FROM runs" + clause + " ORDER BY rowid", args)]

    # -- results: keyed work items ----------------------------------------------------------

    def put_result(self, result: Result, *, force: bool = False) -> bool:
        """Record a work item's result. Returns False (and writes nothing) when the key is already
        recorded, unless `force`, which replaces it."""
        verb = "INSERT OR REPLACE" if force else "INSERT OR IGNORE"
        key = result.probe_key
        with self.transaction() as conn:
            cursor = conn.execute(
                f"{verb} INTO results(task_version, probe, probe_kind, probe_name, probe_step, attempt, run_id,"
                " backend, status, reward, payload_json, duration_s, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    result.task_version,
                    result.probe,
                    None if key is None else key.kind.value,
                    None if key is None else key.name,
                    None if key is None else key.step,
                    result.attempt,
                    result.run_id,
                    result.backend,
                    result.status.value,
                    result.reward,
                    to_json(result.payload),
                    result.duration_s,
                    ts(result.created_at),
                ),
            )
            return cursor.rowcount > 0

    def has_result(self, key: ResultKey) -> bool:
        row = (
            self._reader()
            .execute(
                "SELECT 1 FROM results WHERE task_version = ? AND probe = ? AND attempt = ?",
                (key.task_version, key.probe, key.attempt),
            )
            .fetchone()
        )
        return row is not None

    def get_result(self, key: ResultKey) -> Result | None:
        row = (
            self._reader()
            .execute(
                "SELECT * FROM results WHERE task_version = ? AND probe = ? AND attempt = ?",
                (key.task_version, key.probe, key.attempt),
            )
            .fetchone()
        )
        return _result(row) if row else None

    def pending(self, keys: Iterable[ResultKey]) -> list[ResultKey]:
        """The keys that have no result yet, in the order given, without duplicates."""
        wanted = list(dict.fromkeys(keys))
        versions = sorted({k.task_version for k in wanted})
        done: set[ResultKey] = set()
        conn = self._reader()
        for i in range(0, len(versions), _CHUNK):
            chunk = versions[i : i + _CHUNK]
            marks = ",".join("?" * len(chunk))
            rows = conn.execute(
                f"SELECT task_version, probe, attempt FROM results WHERE task_version IN ({marks})", chunk
            )
            done.update(ResultKey(task_version=r[0], probe=r[1], attempt=r[2]) for r in rows)
        return [k for k in wanted if k not in done]

    def results(self, *, task_version: str | None = None, run_id: str | None = None) -> list[Result]:
        clause, args = where(task_version=task_version, run_id=run_id)
        return [_result(r) for r in self._reader().execute("SELECT * FROM results" + clause + " ORDER BY rowid", args)]

    # -- findings ---------------------------------------------------------------------------

    def add_finding(self, finding: Finding) -> Finding:
        with self.transaction() as conn:
            cursor = conn.execute(
                "INSERT INTO findings(task_version, run_id, code, severity, message, evidence_json, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    finding.task_version,
                    finding.run_id,
                    finding.code.value,
                    finding.severity.value,
                    finding.message,
                    to_json(finding.evidence),
                    ts(finding.created_at),
                ),
            )
        return finding.model_copy(update={"id": cursor.lastrowid})

    def findings(self, *, task_version: str | None = None, run_id: str | None = None) -> list[Finding]:
        clause, args = where(task_version=task_version, run_id=run_id)
        return [_finding(r) for r in self._reader().execute("SELECT * FROM findings" + clause + " ORDER BY id", args)]


def _run(row: sqlite3.Row) -> Run:
    data = dict(row)
    data["config"] = json.loads(data.pop("config_json"))
    return Run.model_validate(data)


def _result(row: sqlite3.Row) -> Result:
    data = dict(row)
    data["payload"] = json.loads(data.pop("payload_json"))
    for typed in ("probe_kind", "probe_name", "probe_step"):  # the probe's text holds them (`Result.probe_key`)
        data.pop(typed, None)
    return Result.model_validate(data)


def _audit(row: sqlite3.Row) -> AuditRecord:
    data = dict(row)
    data["codes"] = json.loads(data.pop("codes_json"))
    harness = data.pop("harness_json")
    data["harness"] = None if harness is None else json.loads(harness)
    return AuditRecord.model_validate(data)


def _finding(row: sqlite3.Row) -> Finding:
    data = dict(row)
    data["evidence"] = json.loads(data.pop("evidence_json"))
    return Finding.model_validate(data)
