"""One run per pool at a time: an exclusive lock beside the ledger, held for as long as a run is open.

`run_lock` takes `flock` on `<ledger>.lock` (the kernel drops it when the holding process dies, so a
lock is never stale) and writes who holds it (pid, host, what, since) for the message a second run
gets. Within one process it is re-entrant (a pipeline's stages, a repair's fresh audits and the
threads of one command share it). Read-only commands never take it.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from qaflow.ledger.db import LedgerError
from qaflow.models.records import utcnow


class PoolBusyError(LedgerError):
    """Another process holds the pool's run lock."""


_GUARD = threading.Lock()
_HELD: dict[str, list[int]] = {}
"""Resolved lock path -> [fd, holders in this process]."""


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


@contextmanager
def run_lock(ledger_path: Path, what: str) -> Iterator[None]:
    """Hold the pool's run lock for the block.

    Raises:
        PoolBusyError: another process holds it (the message names the holder); nothing was changed.
    """
    path = lock_path(Path(ledger_path))
    key = str(path.resolve())
    with _GUARD:
        if key in _HELD:
            _HELD[key][1] += 1
        else:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                raise PoolBusyError(
                    ledger_path.parent.parent if ledger_path.parent.name == ".qaflow" else ledger_path,
                    f"another qaflow run holds this pool: {holder(path)}; wait for it to end (read-only "
                    "commands such as `pool list` work meanwhile), or run on a copy of the pool",
                ) from None
            info = {"pid": os.getpid(), "host": socket.gethostname(), "what": what, "since": utcnow().isoformat()}
            os.ftruncate(fd, 0)
            os.pwrite(fd, json.dumps(info).encode(), 0)
            _HELD[key] = [fd, 1]
    try:
        yield
    finally:
        with _GUARD:
            held = _HELD[key]
            held[1] -= 1
            if held[1] == 0:
                del _HELD[key]
                os.ftruncate(held[0], 0)
                fcntl.flock(held[0], fcntl.LOCK_UN)
                os.close(held[0])
