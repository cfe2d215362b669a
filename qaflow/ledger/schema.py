"""The ledger's SQL schema as numbered migrations.

A migration, once released, never changes: a later schema is a new entry with the next
number. `Ledger` applies the missing ones in one transaction when it opens a file, and
refuses a file whose version is newer than the last one known here.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from qaflow.models.probe_key import ProbeKey

Migration = str | Callable[[sqlite3.Connection], None]
"""An SQL statement, or a step that rewrites rows with Python (run in the migration's transaction)."""


def _typed_probe_keys(conn: sqlite3.Connection) -> None:
    """Fill the probe's kind, name and step of every result recorded before those columns (NULL where its probe
    is not a `ProbeKey`'s text: results written by other tools)."""
    rows = conn.execute("SELECT rowid, probe FROM results").fetchall()
    for rowid, probe in rows:
        key = ProbeKey.read(probe)
        if key is not None:
            conn.execute(
                "UPDATE results SET probe_kind = ?, probe_name = ?, probe_step = ? WHERE rowid = ?",
                (key.kind.value, key.name, key.step, rowid),
            )


MIGRATIONS: dict[int, tuple[Migration, ...]] = {
    1: (
        """
        CREATE TABLE task_versions (
            version        TEXT PRIMARY KEY,
            name           TEXT NOT NULL,
            source         TEXT NOT NULL,
            parent_version TEXT NULL REFERENCES task_versions(version),
            path           TEXT NOT NULL,
            status         TEXT NOT NULL,
            error          TEXT NULL,
            created_at     TEXT NOT NULL
        )
        """,
        "CREATE INDEX task_versions_name ON task_versions(name)",
        "CREATE INDEX task_versions_parent ON task_versions(parent_version)",
        """
        CREATE TABLE status_log (
            id         INTEGER PRIMARY KEY AUTOINCREMENT,
            version    TEXT NOT NULL REFERENCES task_versions(version),
            old_status TEXT NULL,
            new_status TEXT NOT NULL,
            reason     TEXT NOT NULL,
            run_id     TEXT NULL,
            created_at TEXT NOT NULL
        )
        """,
        "CREATE INDEX status_log_version ON status_log(version)",
        """
        CREATE TABLE heads (
            path    TEXT PRIMARY KEY,
            version TEXT NOT NULL REFERENCES task_versions(version),
            seen_at TEXT NOT NULL
        )
        """,
        """
        CREATE TABLE runs (
            run_id      TEXT PRIMARY KEY,
            kind        TEXT NOT NULL,
            started_at  TEXT NOT NULL,
            ended_at    TEXT NULL,
            config_json TEXT NOT NULL,
            host        TEXT NOT NULL
        )
        """,
        """
        CREATE TABLE results (
            task_version TEXT NOT NULL REFERENCES task_versions(version),
            probe        TEXT NOT NULL,
            attempt      INTEGER NOT NULL,
            run_id       TEXT NOT NULL REFERENCES runs(run_id),
            backend      TEXT NOT NULL,
            status       TEXT NOT NULL,
            reward       REAL NULL,
            payload_json TEXT NOT NULL,
            duration_s   REAL NOT NULL,
            created_at   TEXT NOT NULL,
            PRIMARY KEY (task_version, probe, attempt)
        )
        """,
        "CREATE INDEX results_run ON results(run_id)",
        """
        CREATE TABLE findings (
            id            INTEGER PRIMARY KEY AUTOINCREMENT,
            task_version  TEXT NOT NULL REFERENCES task_versions(version),
            run_id        TEXT NOT NULL REFERENCES runs(run_id),
            code          TEXT NOT NULL,
            severity      TEXT NOT NULL,
            message       TEXT NOT NULL,
            evidence_json TEXT NOT NULL,
            created_at    TEXT NOT NULL
        )
        """,
        "CREATE INDEX findings_version ON findings(task_version)",
        "CREATE INDEX findings_run ON findings(run_id)",
        """
        CREATE VIEW tasks AS
        SELECT v.name AS name, h.path AS path, v.version AS version, v.status AS status,
               v.error AS error, v.source AS source, v.parent_version AS parent_version,
               v.created_at AS created_at, h.seen_at AS seen_at
        FROM heads h JOIN task_versions v ON v.version = h.version
        ORDER BY v.name, h.path
        """,
    ),
    2: (
        """
        CREATE TABLE rollouts (
            rollout_id      TEXT PRIMARY KEY,
            task_version    TEXT NOT NULL,
            task            TEXT NOT NULL,
            source          TEXT NOT NULL,
            model           TEXT NOT NULL,
            effort          TEXT NOT NULL,
            attempt         INTEGER NOT NULL,
            round           INTEGER NOT NULL,
            agent           TEXT NOT NULL,
            run_id          TEXT NOT NULL,
            exit_status     TEXT NOT NULL,
            stop_reason     TEXT NOT NULL,
            reward          REAL NULL,
            full_reward     INTEGER NOT NULL,
            turns           INTEGER NOT NULL,
            thinking_tokens INTEGER NOT NULL,
            duration_s      REAL NOT NULL,
            record_zlib     BLOB NOT NULL,
            created_at      TEXT NOT NULL
        )
        """,
        "CREATE INDEX rollouts_task ON rollouts(task_version, model, effort)",
        "CREATE INDEX rollouts_run ON rollouts(run_id)",
    ),
    3: (
        """
        CREATE TABLE audits (
            id           INTEGER PRIMARY KEY AUTOINCREMENT,
            task_version TEXT NOT NULL REFERENCES task_versions(version),
            run_id       TEXT NULL,
            verdict      TEXT NOT NULL,
            codes_json   TEXT NOT NULL,
            harness_json TEXT NULL,
            created_at   TEXT NOT NULL
        )
        """,
        "CREATE INDEX audits_version ON audits(task_version)",
        "CREATE INDEX audits_run ON audits(run_id)",
        # run_id names no row of this ledger's runs where an audit was carried over from another ledger
        # (a pipeline's OUT/final keeps the audits of OUT/pool), as status_log's run_id may not.
        # Ledgers before this table kept an audit only as the reason of the status it set ("audit: clean" or
        # "audit: code, code"), and only when the status changed: those rows become the audits they record.
        """
        INSERT INTO audits(task_version, run_id, verdict, codes_json, harness_json, created_at)
        SELECT version, run_id,
               CASE WHEN reason = 'audit: clean' THEN 'accepted' ELSE 'needs_repair' END,
               CASE WHEN reason = 'audit: clean' THEN '[]'
                    ELSE '["' || replace(substr(reason, 8), ', ', '","') || '"]' END,
               NULL, created_at
        FROM status_log WHERE substr(reason, 1, 7) = 'audit: ' ORDER BY id
        """,
        # A result's probe as typed columns beside its text (`qaflow.models.probe_key`): KIND, NAME, STEP.
        "ALTER TABLE results ADD COLUMN probe_kind TEXT NULL",
        "ALTER TABLE results ADD COLUMN probe_name TEXT NULL",
        "ALTER TABLE results ADD COLUMN probe_step TEXT NULL",
        _typed_probe_keys,
        "CREATE INDEX results_kind ON results(task_version, probe_kind)",
    ),
}

LATEST_VERSION = max(MIGRATIONS)

TABLES = (
    "task_versions", "tasks", "heads", "status_log", "runs", "results", "findings", "audits", "rollouts",
)  # fmt: skip
"""Names `Ledger.frame` accepts (tables and views)."""
