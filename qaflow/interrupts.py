"""Stopping a long run cleanly on SIGINT (Ctrl-C) or SIGTERM (a scheduler, `timeout`, `kill`).

Inside `stop_on_signals()` the first signal only asks for a stop: the drivers (the audit's, the rollout
job's) `check()` for it between results, stop scheduling, cancel what has not started, reap the run's
sandboxes (which ends the trials still running within seconds) and raise `Interrupted` carrying what
finished. Nothing is recorded after the request, so a trial cut short by the stop never reaches the
ledger as a result. A second signal raises `KeyboardInterrupt` at once, wherever the main thread is.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

_signum: int | None = None


class Interrupted(BaseException):
    """A run stopped on a signal. The layer that knows fills in what finished before it: `done` (the
    driver's finished items: audits, a rollout report), `run_id` and `recorded` (results its run
    recorded)."""

    def __init__(self, signum: int, done: list[Any] | None = None):
        super().__init__(f"interrupted by {signal.Signals(signum).name}")
        self.signum = signum
        self.done: list[Any] = done or []
        self.run_id: str | None = None
        self.recorded = 0

    @property
    def exit_status(self) -> int:
        return exit_status(self.signum)


def exit_status(signum: int) -> int:
    """The shell's status for a process ended by `signum`: 130 for SIGINT, 143 for SIGTERM."""
    return 128 + signum


def requested() -> int | None:
    """The signal that asked for a stop, or None."""
    return _signum


def request(signum: int = signal.SIGINT) -> None:
    """Ask for a stop as the first signal would (tests, and callers that stop a run themselves)."""
    global _signum
    if _signum is None:
        _signum = signum


def check(done: list[Any] | None = None) -> None:
    """Raise `Interrupted` (with `done`) if a stop was asked for."""
    if _signum is not None:
        raise Interrupted(_signum, done)


def clear() -> None:
    global _signum
    _signum = None


STOPPING = b"\nstopping: ending the trials in flight, keeping what finished (again to stop at once)\n"


def _handle(signum: int, _frame: FrameType | None) -> None:
    global _signum
    if _signum is not None:
        raise KeyboardInterrupt
    _signum = signum
    with contextlib.suppress(OSError):
        os.write(2, STOPPING)  # async-signal-safe, unlike print


@contextmanager
def stop_on_signals() -> Iterator[None]:
    """Turn SIGINT and SIGTERM into stop requests for the block (main thread only; elsewhere a no-op),
    then restore the handlers that were there. A signal the process ignores stays ignored; a request
    left from an earlier block is cleared."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    clear()
    # a signal ignored on purpose (`nohup`, a shell's background job) stays ignored
    caught = [s for s in (signal.SIGINT, signal.SIGTERM) if signal.getsignal(s) is not signal.SIG_IGN]
    before = {s: signal.signal(s, _handle) for s in caught}
    try:
        yield
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)
        clear()
