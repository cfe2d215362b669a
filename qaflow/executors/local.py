"""`LocalExecutor`: a bounded thread pool on this machine, never more than `jobs` items at once (the
default executor).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, CancelledError, Future, ThreadPoolExecutor
from concurrent.futures import wait as futures_wait
from typing import Any, Self

from qaflow.executors.base import (
    ExecutorError,
    ExecutorKind,
    Handle,
    ItemCancelledError,
    Resources,
    _label,
    as_completed,
)
from qaflow.task import Task


class _LocalHandle:
    def __init__(self, future: Future[Any], label: str):
        self.future = future
        self.label = label

    def done(self) -> bool:
        return self.future.done()

    def result(self) -> Any:
        try:
            return self.future.result()
        except CancelledError as e:
            raise ItemCancelledError(f"{self.label} was cancelled") from e


class LocalExecutor:
    """A bounded thread pool on this machine: never more than `jobs` items run at once."""

    kind: ExecutorKind = "local"

    def __init__(self, jobs: int = 2, resources: Resources | None = None):
        if jobs < 1:
            raise ExecutorError(f"jobs must be at least 1, not {jobs}")
        self.jobs = jobs
        self.resources = resources or Resources()
        self._pool = ThreadPoolExecutor(jobs, thread_name_prefix="qaflow-item")
        self._lock = threading.Lock()
        self._live: set[_LocalHandle] = set()

    @property
    def slots(self) -> int:
        return self.jobs

    def submit(
        self, fn: Callable[..., Any], /, *args: Any, resources: Resources | None = None, **kwargs: Any
    ) -> _LocalHandle:
        handle = _LocalHandle(self._pool.submit(fn, *args, **kwargs), _label(fn))
        with self._lock:
            self._live.add(handle)
        handle.future.add_done_callback(lambda _f: self._forget(handle))
        return handle

    def _forget(self, handle: _LocalHandle) -> None:
        with self._lock:
            self._live.discard(handle)

    def wait(self, handles: Collection[Handle], timeout: float | None = None) -> list[Handle]:
        by_future = {h.future: h for h in handles if isinstance(h, _LocalHandle)}
        done, _ = futures_wait(by_future, timeout=timeout, return_when=FIRST_COMPLETED)
        return [by_future[f] for f in done]

    def as_completed(self, handles: Iterable[Handle]) -> Iterator[Handle]:
        return as_completed(self, handles)

    def share_task(self, task: Task) -> Task:
        return task

    def cancel(self, handles: Iterable[Handle]) -> None:
        for h in handles:
            if isinstance(h, _LocalHandle):
                h.future.cancel()  # a running thread cannot be killed: reaping its sandbox ends it

    def reap(self, run_ids: Iterable[str]) -> int:
        return sum(_reap_here(run_id) for run_id in run_ids)

    def cancel_all(self, run_ids: Iterable[str] = ()) -> int:
        with self._lock:
            live = list(self._live)
        self.cancel(live)
        return self.reap(run_ids)

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _reap_here(run_id: str) -> int:
    from qaflow.sandbox import reap_run

    return reap_run(run_id)
