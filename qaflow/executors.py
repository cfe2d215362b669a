"""Executors: where the work items of audits, repairs and rollouts run.

One interface, two kinds:
- `LocalExecutor(jobs)`: a thread pool on this machine, never more than `jobs` items at once (the default);
- `RayExecutor(address)`: every item is a Ray task declaring its CPUs and memory, running the sandbox on
  the worker's own Docker daemon (or bubblewrap); a worker that dies (process killed, node lost, out of
  memory) has its item retried once by Ray; cancelling kills remote work and reaps the run's
  containers on every alive node.

A work item is a top-level function (picklable by reference) whose arguments and return value are
picklable and pydantic-serialisable. Results stream back to the caller (`wait`, `as_completed`), and
only the caller (the driver) writes the ledger: no worker ever opens it.

Task folders travel as `share_task(task)`: the `Task` itself in-process; on Ray a `TaskRef` with the
folder packed (tar.gz), put once in the object store, which a worker unpacks into its cache when the
driver's path is not there with the same files (`resolve_task`).
"""

from __future__ import annotations

import contextlib
import copyreg
import io
import os
import pickle
import shutil
import tarfile
import tempfile
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, CancelledError, Future, ThreadPoolExecutor
from concurrent.futures import wait as futures_wait
from pathlib import Path
from typing import Any, Literal, Protocol, Self, runtime_checkable

from pydantic import BaseModel, Field

from qaflow.errors import QaflowError, TaskError
from qaflow.task import IGNORED_NAMES, Task, tree_hash

ExecutorKind = Literal["local", "ray"]
POLL_S = 0.5
"""How often a wait wakes up (so that Ctrl-C is seen while waiting on Ray)."""
SHARED_TASKS = 256
"""Packed task folders a Ray driver keeps in the object store at once (least recently used go first)."""


class ExecutorError(QaflowError):
    """The executor cannot be used (Ray missing, no cluster at the address, a bad option)."""


class WorkerLostError(QaflowError):
    """The worker running an item died (killed, out of memory, node lost) on every try."""


class ItemCancelledError(QaflowError):
    """The item was cancelled before it finished."""


class Resources(BaseModel):
    """What one work item declares: CPUs and memory (Ray schedules by them; the local pool ignores them)."""

    cpus: float = Field(1.0, gt=0, description="CPUs reserved per item")
    memory_mb: int | None = Field(None, gt=0, description="Memory reserved per item in MiB; None = not declared")


@runtime_checkable
class Handle(Protocol):
    """One submitted work item."""

    label: str

    def done(self) -> bool: ...

    def result(self) -> Any:
        """The item's value; raises what the item raised, `WorkerLostError` or `ItemCancelledError`."""
        ...


class Executor(Protocol):
    """Runs work items and streams their results back to the calling (driver) thread."""

    kind: ExecutorKind
    resources: Resources

    @property
    def slots(self) -> int:
        """About how many items run at once (local: jobs; Ray: the cluster's CPUs / CPUs per item)."""
        ...

    def submit(
        self, fn: Callable[..., Any], /, *args: Any, resources: Resources | None = None, **kwargs: Any
    ) -> Handle:
        """Run `fn(*args, **kwargs)` somewhere; `resources` overrides the executor's per-item default."""
        ...

    def wait(self, handles: Collection[Handle], timeout: float | None = None) -> list[Handle]:
        """Block until at least one of `handles` is done (or `timeout` passes); return the done ones."""
        ...

    def as_completed(self, handles: Iterable[Handle]) -> Iterator[Handle]:
        """Yield `handles` as they finish."""
        ...

    def share_task(self, task: Task) -> Any:
        """What to pass a work item for `task` (see `resolve_task` on the worker side)."""
        ...

    def cancel(self, handles: Iterable[Handle]) -> None:
        """Cancel these items: pending ones never start; running ones are killed where the executor can."""
        ...

    def reap(self, run_ids: Iterable[str]) -> int:
        """Remove the sandboxes (containers) of these runs wherever this executor runs items; returns how many."""
        ...

    def cancel_all(self, run_ids: Iterable[str] = ()) -> int:
        """Cancel every unfinished item, then reap the sandboxes of `run_ids`; returns the sandboxes removed."""
        ...

    def close(self) -> None: ...

    def __enter__(self) -> Self: ...

    def __exit__(self, *exc: object) -> None: ...


def as_completed(executor: Executor, handles: Iterable[Handle]) -> Iterator[Handle]:
    """`Executor.as_completed` in terms of `Executor.wait`."""
    pending = list(handles)
    while pending:
        done = executor.wait(pending, timeout=POLL_S)
        ids = {id(h) for h in done}
        pending = [h for h in pending if id(h) not in ids]
        yield from done


# -- task folders on workers ----------------------------------------------------------------


class TaskRef(BaseModel):
    """A task folder for a worker that may not see the driver's disk: its path, version and packed files."""

    path: str
    version: str
    archive: bytes | None = None
    """tar.gz of the folder (IGNORED_NAMES left out); None = the path is reachable where the item runs."""

    @classmethod
    def pack(cls, task: Task) -> TaskRef:
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w:gz", compresslevel=6) as tar:
            for path in sorted(task.path.rglob("*")):
                rel = path.relative_to(task.path)
                if any(part in IGNORED_NAMES for part in rel.parts) or (path.is_dir() and not path.is_symlink()):
                    continue
                tar.add(path, arcname=rel.as_posix(), recursive=False)
        return cls(path=str(task.path), version=task.version, archive=buffer.getvalue())


def task_cache_dir() -> Path:
    """Where workers unpack shipped task folders (QAFLOW_TASK_CACHE, else the user cache)."""
    env = os.environ.get("QAFLOW_TASK_CACHE")
    if env:
        return Path(env)
    import platformdirs

    return Path(platformdirs.user_cache_dir("qaflow")) / "tasks"


def resolve_task(ref: Task | TaskRef, *, require_solution: bool = True) -> Task:
    """The `Task` a work item runs: `ref` itself, the driver's folder when it is here with the same
    files, else the shipped archive unpacked into the task cache (keyed by version).

    Raises:
        TaskError: the folder is not here and nothing was shipped, or it does not load as the same version.
    """
    if isinstance(ref, Task):
        return ref
    here = Path(ref.path)
    if here.is_dir() and tree_hash(here) == ref.version:
        folder = here
    elif ref.archive is not None:
        folder = _unpack(ref)
    else:
        raise TaskError(here, f"the task folder (version {ref.version[:12]}) is not on this worker")
    task = Task.load(folder, require_solution=require_solution)
    if task.version != ref.version:
        raise TaskError(folder, f"loaded version {task.version[:12]}, expected {ref.version[:12]}")
    return task


def _unpack(ref: TaskRef) -> Path:
    assert ref.archive is not None
    cache = task_cache_dir()
    name = Path(ref.path).name or "task"
    folder = cache / f"{ref.version[:24]}" / name
    if folder.is_dir() and tree_hash(folder) == ref.version:
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".unpack-", dir=folder.parent))
    try:
        with tarfile.open(fileobj=io.BytesIO(ref.archive), mode="r:gz") as tar:
            tar.extractall(tmp / name, filter="data")
        if folder.exists():
            shutil.rmtree(folder, ignore_errors=True)
        try:
            (tmp / name).rename(folder)
        except OSError:
            if not (folder.is_dir() and tree_hash(folder) == ref.version):  # another worker won the race
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return folder


# -- local ----------------------------------------------------------------------------------


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


def _label(fn: Callable[..., Any]) -> str:
    return getattr(fn, "__qualname__", None) or repr(fn)


# -- Ray ------------------------------------------------------------------------------------


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


def executor_from_options(
    kind: str = "local",
    address: str | None = None,
    jobs: int = 2,
    *,
    cpus_per_item: float = 1.0,
    memory_mb: int | None = None,
) -> Executor:
    """The executor the CLI options ask for: `--executor local|ray`, `--address`, `--jobs` (local only).

    Raises:
        ExecutorError: an unknown kind, `--address` without Ray, or Ray missing or unreachable.
    """
    if kind == "local":
        if address:
            raise ExecutorError("--address needs --executor ray")
        return LocalExecutor(jobs, Resources(cpus=cpus_per_item, memory_mb=memory_mb))
    if kind == "ray":
        return RayExecutor(address or None, cpus_per_item=cpus_per_item, memory_mb=memory_mb)
    raise ExecutorError(f"unknown executor {kind!r}; choose local or ray")


__all__ = [
    "Executor",
    "ExecutorError",
    "ExecutorKind",
    "Handle",
    "ItemCancelledError",
    "LocalExecutor",
    "RayExecutor",
    "Resources",
    "TaskRef",
    "WorkerLostError",
    "as_completed",
    "executor_from_options",
    "resolve_task",
]
