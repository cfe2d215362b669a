"""The executor interface: its errors, `Resources`, the `Handle` and `Executor` protocols and
`as_completed`; and task folders on workers (`TaskRef`, `task_cache_dir`, `resolve_task`).
"""

from __future__ import annotations

import io
import os
import shutil
import tarfile
import tempfile
from collections.abc import Callable, Collection, Iterable, Iterator
from pathlib import Path
from typing import Any, Literal, Protocol, Self, runtime_checkable

from pydantic import BaseModel, Field

from qaflow.errors import QaflowError, TaskError
from qaflow.task import IGNORED_NAMES, Task, tree_hash

ExecutorKind = Literal["local", "ray"]
POLL_S = 0.5
"""How often a wait wakes up (so that Ctrl-C is seen while waiting on Ray)."""


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


def _label(fn: Callable[..., Any]) -> str:
    return getattr(fn, "__qualname__", None) or repr(fn)
