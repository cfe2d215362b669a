"""Progress of a long command: the live bar on a terminal; lines a log can read everywhere else.

With output piped (CI, a log file, `| tee`) a transient bar prints nothing until the end, so there each
finished item is one flushed line (`audit 3/60 csv-sum: accepted, 11.0 s`) and, while nothing
finishes, a heartbeat line at least every `HEARTBEAT_S` seconds says the run is alive.
"""

from __future__ import annotations

import os
import threading
import time
from types import TracebackType
from typing import Self

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

HEARTBEAT_ENV = "QAFLOW_HEARTBEAT_S"
HEARTBEAT_S = 30.0
"""Longest silence on a log (seconds); $QAFLOW_HEARTBEAT_S changes it."""


def heartbeat_s() -> float:
    try:
        return max(0.1, float(os.environ.get(HEARTBEAT_ENV, HEARTBEAT_S)))
    except ValueError:
        return HEARTBEAT_S


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m{secs:02d}s" if hours else f"{minutes}m{secs:02d}s"


class RunProgress:
    """`with RunProgress(console, "audit", total) as progress: progress.done("task: verdict")`."""

    def __init__(self, console: Console, label: str, total: int | None = None):
        self.console, self.label, self.total = console, label, total
        self.count = 0
        self.started = time.monotonic()
        self._last_line = self.started
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._live = console.is_terminal
        self._bar: Progress | None = None
        self._beat: threading.Thread | None = None

    def __enter__(self) -> Self:
        if self._live:
            self._bar = Progress(
                TextColumn(f"[bold]{escape(self.label)}[/bold]"), BarColumn(), MofNCompleteColumn(),
                TimeElapsedColumn(), TextColumn("{task.description}"), console=self.console, transient=True,
            )  # fmt: skip
            self._bar.__enter__()
            self._task = self._bar.add_task("", total=self.total)
        else:
            self._beat = threading.Thread(target=self._heartbeat, name="qaflow-heartbeat", daemon=True)
            self._beat.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._stop.set()
        if self._bar is not None:
            self._bar.__exit__(kind, error, trace)
        if self._beat is not None:
            self._beat.join(timeout=1)

    def set_total(self, total: int) -> None:
        self.total = total
        if self._bar is not None:
            self._bar.update(self._task, total=total)

    def done(self, message: str) -> None:
        """One item finished: advance the bar, or print its line."""
        with self._lock:
            self.count += 1
            if self._bar is not None:
                self._bar.update(self._task, advance=1, description=escape(message))
            else:
                self._line(message)

    def _where(self) -> str:
        return f"{self.label} {self.count}/{self.total}" if self.total is not None else f"{self.label} {self.count}"

    def _line(self, message: str) -> None:
        print(f"{self._where()} {message}", file=self.console.file, flush=True)
        self._last_line = time.monotonic()

    def _heartbeat(self) -> None:
        every = heartbeat_s()
        while not self._stop.wait(min(every, 1.0)):
            with self._lock:
                now = time.monotonic()
                if now - self._last_line >= every:
                    self._line(f"running, {_clock(now - self.started)} elapsed")
