"""What every probe of one task's audit works with: the work items the driver runs (`Work`), and the task's
run (`TaskRun`: the task, where its work runs (`RunContext`), the run's settings and the one way to ask for
trials, `TrialRequest`s).

A probe is a generator: it yields the work items it needs next and receives their results (an exception for
an item that failed) in the same order, so the driver can keep every task's probes in flight at once."""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from qaflow.audit.config import AuditConfig
from qaflow.audit.probe_run import ProbeRun
from qaflow.audit.work_items import RunContext, TrialRequest
from qaflow.executors import Resources
from qaflow.task import Task

T = TypeVar("T")

SharedTask = Any
"""The executor's handle on a task folder (`Executor.share_task`): the `Task` itself on local threads, an
object-store reference of the packed folder on Ray."""


@dataclass
class Work:
    """One work item a probe asks for; `record` runs in the driver when its result comes back."""

    fn: Callable[..., Any]
    args: tuple[Any, ...]
    resources: Resources | None = None
    record: Callable[[Any], None] | None = None


Probe = Generator[list[Work], list[Any], T]
"""A probe (or a task's whole audit): yields work items, receives their outcomes, returns its result."""


class Trials(Protocol):
    """The runs of `requests`, in order: recorded ones from the ledger, the others run and recorded. On
    `shared` (a copy of the task, e.g. with its disabled tests enabled) instead of the task's own folder."""

    def __call__(
        self, requests: list[TrialRequest], *, shared: SharedTask | None = None
    ) -> Generator[list[Work], list[Any], list[ProbeRun]]: ...


@dataclass(frozen=True)
class TaskRun:
    """One task's audit in one run: what its probes need besides their own evidence."""

    task: Task
    shared: SharedTask
    resources: Resources
    context: RunContext
    config: AuditConfig
    trials: Trials
    share: Callable[[Task], SharedTask]
    """The executor's `share_task`, for a copy of the task a probe makes."""

    @property
    def backend(self) -> str:
        return self.context.backend

    def work(self, fn: Callable[..., Any], *args: Any) -> Work:
        """A work item of this task: `fn(shared task, *args, run context)`."""
        return Work(fn, (self.shared, *args, self.context), self.resources)
