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

Modules: `base` (the errors, `Resources`, the `Handle` and `Executor` protocols, `as_completed`, and
task folders on workers: `TaskRef`, `resolve_task`), `local` (`LocalExecutor`), `ray` (`RayExecutor`
and what its workers run); `executor_from_options`, which picks one from the CLI options, is here.
"""

from __future__ import annotations

from qaflow.executors.base import (
    POLL_S,
    Executor,
    ExecutorError,
    ExecutorKind,
    Handle,
    ItemCancelledError,
    Resources,
    TaskRef,
    WorkerLostError,
    as_completed,
    resolve_task,
    task_cache_dir,
)
from qaflow.executors.local import LocalExecutor
from qaflow.executors.ray import SHARED_TASKS, RayExecutor, reap_on_node, run_item


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
    "POLL_S",
    "SHARED_TASKS",
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
    "reap_on_node",
    "resolve_task",
    "run_item",
    "task_cache_dir",
]
