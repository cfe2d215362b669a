"""One run per pool at a time: an exclusive lock beside the ledger, held for as long as a run is open.

`run_lock` takes `<ledger>.lock` with `filelock` (an `flock` on Unix: the kernel drops it when the holding process
dies, so a lock is never stale) and writes who holds it (pid, host, what, since) for the message a second run
gets. Within one process it is re-entrant (a pipeline's stages, a repair's fresh audits and the threads of one
command share it: one `FileLock` per path, its hold shared across threads). Read-only commands never take it.
"""

from __future__ import annotations

import json
import os
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from filelock import FileLock, Timeout

from qaflow.ledger.db import LedgerError
from qaflow.models.records import utcnow


class PoolBusyError(LedgerError):
    """Another process holds the pool's run lock."""


_GUARD = threading.Lock()
"""Makes taking the lock and naming the holder (or clearing the name and releasing) one step for this process's
threads."""


def lock_path(ledger_path: Path) -> Path:
    return ledger_path.with_name(ledger_path.name + ".lock")


def holder(path: Path) -> str:
    """Who holds the lock at `path`, as the holder wrote it."""
    try:
        info = json.loads(path.read_text(encoding="utf-8") or "{}")
    except (OSError, ValueError):
        return "another process"
    if not isinstance(info, dict) or not info:
        return "another process"
    where = f"pid {info.get('pid', '?')} on {info.get('host', '?')}, since {info.get('since', '?')}"
    return f"{info.get('what', 'a run')} ({where})"


def _file_lock(path: Path) -> FileLock:
    """The process's one lock object for `path` (never waits; never a soft lock, which a dead holder leaves)."""
    return FileLock(
        path, timeout=0, thread_local=False, is_singleton=True, fallback_to_soft=False, preserve_lock_file=True
    )


@contextmanager
def run_lock(ledger_path: Path, what: str) -> Iterator[None]:
    """Hold the pool's run lock for the block.

    Raises:
        PoolBusyError: another process holds it (the message names the holder); nothing was changed.
    """
    path = lock_path(Path(ledger_path))
    lock = _file_lock(path)
    with _GUARD:
        try:
            lock.acquire()
        except Timeout:
            raise PoolBusyError(
                ledger_path.parent.parent if ledger_path.parent.name == ".qaflow" else ledger_path,
                f"another qaflow run holds this pool: {holder(path)}; wait for it to end (read-only "
                "commands such as `pool list` work meanwhile), or run on a copy of the pool",
            ) from None
        if lock.lock_counter == 1:
            info = {"pid": os.getpid(), "host": socket.gethostname(), "what": what, "since": utcnow().isoformat()}
            path.write_text(json.dumps(info), encoding="utf-8")
    try:
        yield
    finally:
        with _GUARD:
            if lock.lock_counter == 1:
                path.write_text("", encoding="utf-8")
            lock.release()
