"""The one loop that drives work on an executor: submit, wait, hand back, and on a stop cancel and reap.

The audit (tasks stepped through their phases), `qaflow check`, rollout jobs and replays all run their items
through a `Driver`: the caller submits items with a tag and, from `run`, gets each outcome (the value, or the
exception the item raised) in completion order on the driver thread; `refill` is called before every wait so
the caller can submit more (a finished phase's next items, the next queued task). A stop request
(`qaflow.interrupts`) or any error leaving `run` cancels the items in flight and reaps the sandboxes of the
run ids given, then propagates: what was handed back stays handed back.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

from qaflow import interrupts
from qaflow.executors.base import POLL_S, Executor, Handle, Resources

Tag = TypeVar("Tag")


class Driver(Generic[Tag]):
    """Drives the items of one run on `executor`; `run_ids` are reaped when the run stops early."""

    def __init__(self, executor: Executor, run_ids: Sequence[str], *, poll_s: float = POLL_S):
        self.executor = executor
        self.run_ids = list(run_ids)
        self.poll_s = poll_s
        self._waiting: dict[Handle, Tag] = {}

    @property
    def in_flight(self) -> int:
        return len(self._waiting)

    def submit(self, tag: Tag, fn: Callable[..., Any], *args: Any, resources: Resources | None = None) -> None:
        """Run `fn(*args)` on the executor; its outcome comes back to `run`'s `on_done` with `tag`."""
        self._waiting[self.executor.submit(fn, *args, resources=resources)] = tag

    def run(self, on_done: Callable[[Tag, Any], None], refill: Callable[[], None] = lambda: None) -> None:
        """Until nothing is in flight after a `refill`: wait, and call `on_done(tag, outcome)` for each item
        that finished (outcome: its value, or the `Exception` it raised)."""
        try:
            while True:
                interrupts.check()
                refill()
                if not self._waiting:
                    return
                for handle in self.executor.wait(list(self._waiting), timeout=self.poll_s):
                    interrupts.check()  # an item cut short by the stop is no result
                    tag = self._waiting.pop(handle)
                    try:
                        outcome = handle.result()
                    except Exception as e:
                        outcome = e
                    on_done(tag, outcome)
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Cancel the items in flight and reap the run's sandboxes (each step best effort)."""
        waiting, self._waiting = list(self._waiting), {}
        with contextlib.suppress(Exception):
            self.executor.cancel(waiting)
        if self.run_ids:
            with contextlib.suppress(Exception):
                self.executor.reap(self.run_ids)
