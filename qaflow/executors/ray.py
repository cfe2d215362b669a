"""`RayExecutor`: every work item is a Ray task declaring its CPUs and memory, running the sandbox on
the worker's own Docker daemon (or bubblewrap); a worker that dies (process killed, node lost, out of
memory) has its item retried once by Ray; cancelling kills remote work and reaps the run's containers on
every alive node.

Ray pickles `run_item` and `reap_on_node` by reference (`qaflow.executors.ray`): workers import this module.
"""

from __future__ import annotations

import contextlib
import copyreg
import pickle
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable, Iterator
from typing import Any, Self

from qaflow.executors.base import (
    POLL_S,
    ExecutorError,
    ExecutorKind,
    Handle,
    ItemCancelledError,
    Resources,
    TaskRef,
    WorkerLostError,
    _label,
    as_completed,
)
from qaflow.executors.local import _reap_here
from qaflow.task import Task

SHARED_TASKS = 256
"""Packed task folders a Ray driver keeps in the object store at once (least recently used go first)."""


def _import_ray() -> Any:
    try:
        import ray
    except ImportError as e:
        raise ExecutorError("the ray executor needs Ray: pip install 'qaflow[ray]'") from e
    return ray


def run_item(qaflow_item_fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """What a Ray task runs: the item itself; an exception it raises that would not survive the trip
    back (a custom `__init__`, as `TaskError(path, reason)` has) is made portable first."""
    try:
        return qaflow_item_fn(*args, **kwargs)
    except Exception as e:
        _make_portable(e)
        raise


def _make_portable(error: BaseException) -> None:
    seen: set[int] = set()
    item: BaseException | None = error
    while item is not None and id(item) not in seen:
        seen.add(id(item))
        try:
            pickle.loads(pickle.dumps(item))
        except Exception:
            copyreg.pickle(type(item), _reduce_exception)
        item = item.__cause__ or item.__context__


def _reduce_exception(error: BaseException) -> tuple[Any, ...]:
    state = {k: v for k, v in vars(error).items() if _picklable(v)}
    return _rebuild_exception, (type(error), error.args, state)


def _picklable(value: Any) -> bool:
    try:
        pickle.dumps(value)
    except Exception:
        return False
    return True


def _rebuild_exception(cls: type[BaseException], args: tuple[Any, ...], state: dict[str, Any]) -> BaseException:
    """The exception without calling its `__init__`: its class, args and attributes as they were."""
    error = cls.__new__(cls, *args)
    error.args = args
    error.__dict__.update(state)
    return error


def reap_on_node(run_ids: list[str]) -> tuple[str, int]:
    """A Ray task pinned to one node: remove the sandboxes of `run_ids` there; (node id, removed)."""
    import ray

    node = ray.get_runtime_context().get_node_id()
    return node, sum(_reap_here(run_id) for run_id in run_ids)


class _RayHandle:
    def __init__(self, ref: Any, label: str, tries: int, forget: Callable[[_RayHandle], None]):
        self.ref = ref
        self.label = label
        self.tries = tries
        self._done = False
        self._forget = forget

    def done(self) -> bool:
        if not self._done:
            ray = _import_ray()
            ready, _ = ray.wait([self.ref], timeout=0, fetch_local=False)
            self._done = bool(ready)
        return self._done

    def result(self) -> Any:
        ray = _import_ray()
        from ray import exceptions as rex

        try:
            return ray.get(self.ref)
        except rex.TaskCancelledError as e:
            raise ItemCancelledError(f"{self.label} was cancelled") from e
        except rex.RayTaskError as e:  # the item raised: that exception, with the worker's traceback as a note
            cause = getattr(e, "cause", None)
            if not isinstance(cause, Exception):
                raise e.as_instanceof_cause() from None
            cause.add_note(f"raised on a Ray worker:\n{str(e).strip()}")
            raise cause from None
        except (rex.WorkerCrashedError, rex.NodeDiedError, rex.OutOfMemoryError, rex.ObjectLostError) as e:
            raise WorkerLostError(
                f"{self.label}: the worker running it died on each of {self.tries} tries "
                f"({type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''})"
            ) from e
        except rex.RayError as e:
            raise WorkerLostError(f"{self.label}: Ray could not run it: {type(e).__name__}: {e}") from e
        finally:  # ray.get returned or raised: the item is over
            self._done = True
            self._forget(self)


class RayExecutor:
    """Work items as Ray tasks: declared CPUs and memory, retried once when their worker dies.

    `address`: None starts (or joins, with RAY_ADDRESS) a cluster as `ray.init()` does; `auto` joins the
    cluster running on this machine; `ray://host:port` goes through Ray Client. An already initialised
    Ray session is used as it is (and left running on `close`). Items asking more CPUs or memory than the
    largest node has are cut to that node's size, so that none waits forever.
    """

    kind: ExecutorKind = "ray"

    def __init__(
        self,
        address: str | None = None,
        *,
        cpus_per_item: float = 1.0,
        memory_mb: int | None = None,
        max_retries: int = 1,
        init_kwargs: dict[str, Any] | None = None,
    ):
        ray = _import_ray()
        self.resources = Resources(cpus=cpus_per_item, memory_mb=memory_mb)
        self.max_retries = max_retries
        self._owns_session = not ray.is_initialized()
        if self._owns_session:
            try:
                ray.init(address=address, **(init_kwargs or {}))
            except (ConnectionError, RuntimeError, ValueError) as e:
                raise ExecutorError(f"cannot start or join a Ray cluster at {address or '(default)'}: {e}") from e
        self._lock = threading.Lock()
        self._remote = ray.remote(max_retries=max_retries, retry_exceptions=False)(run_item)
        self._live: dict[int, _RayHandle] = {}
        self._tasks: OrderedDict[str, Any] = OrderedDict()
        nodes = [n for n in ray.nodes() if n.get("Alive")]
        self._max_cpus = max((n["Resources"].get("CPU", 0.0) for n in nodes), default=1.0) or 1.0
        self._max_memory = max((n["Resources"].get("memory", 0.0) for n in nodes), default=0.0)
        self._total_cpus = ray.cluster_resources().get("CPU", self._max_cpus)

    @property
    def slots(self) -> int:
        return max(1, int(self._total_cpus // min(self.resources.cpus, self._max_cpus)))

    def _options(self, resources: Resources) -> dict[str, Any]:
        options: dict[str, Any] = {"num_cpus": min(resources.cpus, self._max_cpus)}
        if resources.memory_mb is not None:
            memory = resources.memory_mb * 2**20
            options["memory"] = int(min(memory, self._max_memory) if self._max_memory else memory)
        return options

    def submit(
        self, fn: Callable[..., Any], /, *args: Any, resources: Resources | None = None, **kwargs: Any
    ) -> _RayHandle:
        label = _label(fn)
        options = self._options(resources or self.resources)
        ref = self._remote.options(name=label, **options).remote(fn, *args, **kwargs)
        handle = _RayHandle(ref, label, self.max_retries + 1, self._forget)
        with self._lock:
            self._live[id(handle)] = handle
        return handle

    def _forget(self, handle: _RayHandle) -> None:
        with self._lock:
            self._live.pop(id(handle), None)

    def wait(self, handles: Collection[Handle], timeout: float | None = None) -> list[Handle]:
        ray = _import_ray()
        by_ref = {h.ref: h for h in handles if isinstance(h, _RayHandle)}
        if not by_ref:
            return []
        deadline = None if timeout is None else time.monotonic() + timeout
        refs = list(by_ref)
        while True:
            step = POLL_S if deadline is None else max(0.0, min(POLL_S, deadline - time.monotonic()))
            ready, _ = ray.wait(refs, num_returns=1, timeout=step, fetch_local=True)
            if ready:
                ready, _ = ray.wait(refs, num_returns=len(refs), timeout=0, fetch_local=False)
                done: list[Handle] = []
                with self._lock:
                    for r in ready:
                        h = by_ref[r]
                        h._done = True
                        self._live.pop(id(h), None)
                        done.append(h)
                return done
            if deadline is not None and time.monotonic() >= deadline:
                return []

    def as_completed(self, handles: Iterable[Handle]) -> Iterator[Handle]:
        return as_completed(self, handles)

    def share_task(self, task: Task) -> Any:
        """One object-store copy of the packed folder per task version (LRU, `SHARED_TASKS`)."""
        ray = _import_ray()
        with self._lock:
            ref = self._tasks.get(task.version)
            if ref is not None:
                self._tasks.move_to_end(task.version)
                return ref
        ref = ray.put(TaskRef.pack(task))
        with self._lock:
            self._tasks[task.version] = ref
            while len(self._tasks) > SHARED_TASKS:
                self._tasks.popitem(last=False)
        return ref

    def cancel(self, handles: Iterable[Handle]) -> None:
        ray = _import_ray()
        for h in handles:
            if isinstance(h, _RayHandle) and not h._done:
                with contextlib.suppress(Exception):  # already finished, or its worker is gone
                    ray.cancel(h.ref, force=True)
                with self._lock:
                    self._live.pop(id(h), None)

    def reap(self, run_ids: Iterable[str], timeout: float = 60.0) -> int:
        """Reap on every alive node with a small task pinned to it (no CPU asked, so it runs at once)."""
        ids = list(run_ids)
        if not ids:
            return 0
        ray = _import_ray()
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        reaper = ray.remote(num_cpus=0, max_retries=0)(reap_on_node)
        refs = [
            reaper.options(scheduling_strategy=NodeAffinitySchedulingStrategy(node["NodeID"], soft=False)).remote(ids)
            for node in ray.nodes()
            if node.get("Alive")
        ]
        ready, _ = ray.wait(refs, num_returns=len(refs), timeout=timeout)
        removed = 0
        for ref in ready:
            try:
                removed += ray.get(ref)[1]
            except Exception:  # a node that cannot reap (no daemon there) does not stop the others
                continue
        return removed

    def cancel_all(self, run_ids: Iterable[str] = ()) -> int:
        with self._lock:
            live = list(self._live.values())
        self.cancel(live)
        return self.reap(run_ids)

    def close(self) -> None:
        """Cancel what is still in flight (nobody will collect it), and end the session if this executor began it."""
        with self._lock:
            live = list(self._live.values())
        self.cancel(live)
        with self._lock:
            self._tasks.clear()
            self._live.clear()
        if self._owns_session:
            _import_ray().shutdown()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
