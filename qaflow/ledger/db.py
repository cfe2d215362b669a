"""The ledger's database plumbing: connections, transactions, migrations, and tables as polars frames.

Every thread reads through its own connection; all writes go through one writer connection
guarded by a lock, in `BEGIN IMMEDIATE` transactions. Other processes may open the same file;
`busy_timeout` makes them wait for each other. WAL with `synchronous=NORMAL` keeps every
committed transaction across a killed process (not across a power cut).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, Self

import polars as pl
from pydantic import BaseModel

from qaflow.errors import PathError
from qaflow.ledger.schema import LATEST_VERSION, MIGRATIONS, TABLES
from qaflow.models.records import utcnow

_POLARS_TYPES: dict[str, Any] = {"TEXT": pl.String, "INTEGER": pl.Int64, "REAL": pl.Float64, "BLOB": pl.Binary}


class LedgerError(PathError):
    """The ledger file cannot be used (newer schema, corrupt file) or a write broke a rule."""


def storage_hint(path: Path) -> str:
    """Why SQLite may have failed, when the storage says so: a read-only or full file system."""
    folder = Path(path).parent
    try:
        if folder.is_dir() and not os.access(folder, os.W_OK):
            return " (its folder is read-only)"
        if folder.is_dir() and shutil.disk_usage(folder).free < 1024 * 1024:
            return " (the disk is full)"
    except OSError:
        return ""
    return ""


_STORAGE_FAULT = re.compile(r"disk is full|disk I/O error|readonly database|unable to open database")
"""SQLite's messages for a write the storage refused (they name no file; `LedgerError` adds it)."""


def _refuse_lost_ledger(path: Path) -> None:
    """Raises LedgerError when the ledger file is missing or empty but its write-ahead log holds data:
    the ledger was truncated or deleted, and opening it would start an empty one over its history."""
    wal = path.with_name(path.name + "-wal")
    try:
        size = path.stat().st_size if path.exists() else 0
        wal_size = wal.stat().st_size if wal.exists() else 0
    except OSError:
        return
    if size == 0 and wal_size > 0:
        state = "is empty" if path.exists() else "is missing"
        raise LedgerError(
            path,
            f"the ledger {state} but its write-ahead log {wal.name} holds {wal_size} bytes: the ledger was "
            "truncated or deleted, and opening it would start an empty one; restore it from a backup (or, to "
            "start over, remove the -wal and -shm files too)",
        )


def where(**equals: str | None) -> tuple[str, list[str]]:
    """(` WHERE col = ? AND ...`, args) for the column filters given; a None value filters nothing.
    Column names come from the caller's keywords, never from input."""
    given = {column: value for column, value in equals.items() if value is not None}
    clause = " WHERE " + " AND ".join(f"{column} = ?" for column in given) if given else ""
    return clause, list(given.values())


def ts(value: datetime) -> str:
    return value.isoformat(timespec="microseconds")


def to_json(value: Any) -> str:
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    return json.dumps(value, sort_keys=True, default=str)


class LedgerDB:
    """An open ledger file. Use as a context manager, or call `close()`."""

    def __init__(self, path: Path | str, *, busy_timeout_s: float = 30.0):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._busy_ms = int(busy_timeout_s * 1000)
        self._local = threading.local()
        self._conns: list[sqlite3.Connection] = []
        self._conns_lock = threading.Lock()
        self._write_lock = threading.RLock()
        self._write_depth = 0
        self._write_owner: int | None = None
        self._closed = False
        _refuse_lost_ledger(self.path)
        self._writer = self._connect()
        self._migrate()

    # -- connections and transactions -------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(
                self.path, timeout=self._busy_ms / 1000, isolation_level=None, check_same_thread=False
            )
            conn.row_factory = sqlite3.Row
            conn.execute(f"PRAGMA busy_timeout = {self._busy_ms}")
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
            conn.execute("PRAGMA foreign_keys = ON")
        except sqlite3.DatabaseError as e:
            raise LedgerError(self.path, f"cannot open as a SQLite ledger: {e}{storage_hint(self.path)}") from e
        with self._conns_lock:
            self._conns.append(conn)
        return conn

    def _reader(self) -> sqlite3.Connection:
        """This thread's read connection, or the writer while this thread holds a write transaction."""
        if self._closed:
            raise LedgerError(self.path, "ledger is closed")
        if self._write_owner == threading.get_ident():
            return self._writer
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = self._connect()
        return conn

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction; nested calls join the outer one. Rolled back on any exception."""
        if self._closed:
            raise LedgerError(self.path, "ledger is closed")
        with self._write_lock:
            if self._write_depth:
                self._write_depth += 1
                try:
                    yield self._writer
                finally:
                    self._write_depth -= 1
                return
            self._writer.execute("BEGIN IMMEDIATE")
            self._write_depth, self._write_owner = 1, threading.get_ident()
            try:
                yield self._writer
                self._writer.execute("COMMIT")
            except BaseException as e:
                if self._writer.in_transaction:
                    self._writer.execute("ROLLBACK")
                if isinstance(e, sqlite3.OperationalError) and _STORAGE_FAULT.search(str(e)):
                    raise LedgerError(self.path, f"cannot write: {e}{storage_hint(self.path)}") from e
                raise
            finally:
                self._write_depth, self._write_owner = 0, None

    def _migrate(self) -> None:
        with self.transaction() as conn:
            conn.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            current = int(row["value"]) if row else 0
            if current > LATEST_VERSION:
                raise LedgerError(
                    self.path,
                    f"schema version {current} is newer than this qaflow knows ({LATEST_VERSION}); upgrade qaflow",
                )
            for version in range(current + 1, LATEST_VERSION + 1):
                for step in MIGRATIONS[version]:
                    if isinstance(step, str):
                        conn.execute(step)
                    else:
                        step(conn)
            if current < LATEST_VERSION:
                conn.execute(
                    "INSERT OR REPLACE INTO meta(key, value) VALUES ('schema_version', ?)", (str(LATEST_VERSION),)
                )
                conn.execute("INSERT OR IGNORE INTO meta(key, value) VALUES ('created_at', ?)", (ts(utcnow()),))

    @property
    def schema_version(self) -> int:
        row = self._reader().execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        return int(row["value"])

    def close(self) -> None:
        """Close every connection (all threads'). Idempotent."""
        if self._closed:
            return
        with self._write_lock:
            self._closed = True
            with self._conns_lock:
                for conn in self._conns:
                    conn.close()
                self._conns.clear()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def frame(self, table: str) -> pl.DataFrame:
        """A table or view as a polars DataFrame (`*_at` columns as UTC datetimes, JSON columns as text, BLOBs
        as binary).

        Raises:
            LedgerError: `table` is not one of `TABLES`.
        """
        if table not in TABLES:
            raise LedgerError(self.path, f"unknown table {table!r}; choose one of {', '.join(TABLES)}")
        conn = self._reader()
        declared = {r["name"]: (r["type"] or "").upper() for r in conn.execute(f"PRAGMA table_info({table})")}
        cursor = conn.execute(f"SELECT * FROM {table}" + ("" if table == "tasks" else " ORDER BY rowid"))
        columns = [d[0] for d in cursor.description]
        schema = {c: _POLARS_TYPES.get(declared.get(c, ""), pl.String) for c in columns}
        df = pl.DataFrame([tuple(r) for r in cursor.fetchall()], schema=schema, orient="row")
        stamps = [c for c in columns if c.endswith("_at")]
        return df.with_columns(pl.col(c).str.to_datetime(time_unit="us", time_zone="UTC") for c in stamps)
