"""What `qaflow pipeline run` says while it runs: a live bar on a terminal, flushed lines a log can read.

With stdout going to a file or a pipe, every stage's start and end, every task a stage reports (audited,
repaired, hardened, as `qaflow audit` prints them) and every skip with its reason is one flushed line, e.g.

    pipeline 7/12 audit: started, 4 tasks in
    pipeline 7/12 audit: csv-sum: accepted, 11.0 s
    pipeline 7/12 audit: running, 0m30s elapsed
    pipeline 7/12 audit: done in 42.1 s, 4 tasks in, 4 out
    pipeline 6/12 augment: skipped: needs a model (set `model`)
    pipeline 12/12 export: SFT dataset skipped: no rollouts passed the filters

and while a stage reports nothing a heartbeat line comes at least every `qaflow.cli.progress.heartbeat_s()`
seconds. The lines go to stdout, or to stderr when stdout carries the JSON report; on a terminal the bar (on
stderr) says the same and no line is printed there.
"""

from __future__ import annotations

import threading
import time
from types import TracebackType
from typing import Self, TextIO

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from curation.stages.base import StageInfo
from qaflow.cli.progress import heartbeat_s

DATASET_NAMES = {"sft": "SFT", "rl": "RL", "tasks": "tasks"}


def dataset_skipped(name: str, reason: str) -> str:
    return f"{DATASET_NAMES.get(name, name)} dataset skipped: {reason}"


def stage_notes(info: StageInfo) -> list[str]:
    """What a finished stage left undone, for people: the stage itself or a dataset skipped, candidates left out."""
    notes = [f"skipped: {info.skipped}"] if info.skipped else []
    notes += [dataset_skipped(name, why) for name, why in info.info.get("skipped_datasets", {}).items()]
    left_out = info.info.get("candidates_left_out")
    if left_out:
        notes.append(
            f"tasks dataset: accepted versions only; {left_out} hardened candidates left out "
            "(--include-candidates adds them; on a finished run, with --from export)"
        )
    return notes


def _clock(seconds: float) -> str:
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m{secs:02d}s" if hours else f"{minutes}m{secs:02d}s"


class PipelineLog:
    """`with PipelineLog(stages, lines=sys.stdout, bar=console) as log:` then `log.start`, `log.say`, `log.end`."""

    def __init__(self, stages: tuple[str, ...], *, lines: TextIO | None, bar: Console | None):
        self.stages = stages
        self.lines = lines
        self.stage: str | None = None
        self.started = self._last_line = time.monotonic()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._beat: threading.Thread | None = None
        self._progress: Progress | None = None
        self._bar: TaskID | None = None
        if bar is not None:
            self._progress = Progress(
                TextColumn("[bold]pipeline[/bold]"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                TextColumn("{task.description}"), console=bar, transient=True,
            )  # fmt: skip

    def __enter__(self) -> Self:
        if self._progress is not None:
            self._progress.__enter__()
            self._bar = self._progress.add_task("", total=len(self.stages))
        if self.lines is not None:
            self._beat = threading.Thread(target=self._heartbeat, name="qaflow-pipeline-heartbeat", daemon=True)
            self._beat.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._stop.set()
        if self._progress is not None:
            self._progress.__exit__(kind, error, trace)
        if self._beat is not None:
            self._beat.join(timeout=1)

    def start(self, stage: str, rows_in: int) -> None:
        """A stage starts running."""
        with self._lock:
            self.stage, self.started = stage, time.monotonic()
            self._line(f"started, {rows_in} tasks in")
            self._describe(f"{stage}: running")

    def say(self, message: str) -> None:
        """A message of the running stage (a task done)."""
        with self._lock:
            self._line(message)
            self._describe(f"{self.stage}: {message}" if self.stage else message)

    def end(self, info: StageInfo) -> None:
        """A stage is done (run now, or reused from an earlier run)."""
        with self._lock:
            self.stage = info.stage
            if info.reused:
                self._line("done before, reused")
            elif not info.skipped:
                self._line(f"done in {info.seconds:.1f} s, {info.rows_in} {info.unit} in, {info.rows_out} out")
            for note in stage_notes(info):
                self._line(note)
            self.stage = None
            if self._progress is not None and self._bar is not None:
                self._progress.advance(self._bar)

    def _where(self) -> str:
        if self.stage is None:
            return "pipeline"
        return f"pipeline {self.stages.index(self.stage) + 1}/{len(self.stages)} {self.stage}:"

    def _line(self, message: str) -> None:
        if self.lines is not None:
            print(f"{self._where()} {message}", file=self.lines, flush=True)
            self._last_line = time.monotonic()

    def _describe(self, message: str) -> None:
        if self._progress is not None and self._bar is not None:
            self._progress.update(self._bar, description=escape(message))

    def _heartbeat(self) -> None:
        every = heartbeat_s()
        while not self._stop.wait(min(every, 1.0)):
            with self._lock:
                now = time.monotonic()
                if self.stage is not None and now - self._last_line >= every:
                    self._line(f"running, {_clock(now - self.started)} elapsed")
