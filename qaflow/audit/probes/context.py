"""What every probe of one task's audit works with: the trials it asks for (`TrialRequest`), the work items
the driver runs (`Work`), and the task's run (`TaskRun`: the task, where its work runs, the run's settings
and the one way to ask for trials).

A probe is a generator: it yields the work items it needs next and receives their results (an exception for
an item that failed) in the same order, so the driver can keep every task's probes in flight at once."""

from __future__ import annotations

from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from qaflow.audit.config import AuditConfig
from qaflow.audit.probe_run import ProbeAgent, ProbeRun
from qaflow.executors import Resources
from qaflow.models.probe_key import ProbeKey
from qaflow.task import Task

T = TypeVar("T")

SharedTask = Any
"""The executor's handle on a task folder (`Executor.share_task`): the `Task` itself on local threads, an
object-store reference of the packed folder on Ray."""


@dataclass(frozen=True)
class TrialRequest:
    """One probe trial: the ledger key (`probe`, `attempt`), the agent, and whether the verifier's logs are
    cleared before the verifier runs (the tamper probe keeps what its agent planted there)."""

    key: ProbeKey
    attempt: int
    agent: ProbeAgent
    clear_logs: bool = True

    @property
    def probe(self) -> str:
        return str(self.key)


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
    backend: str
    """The backend its work runs on (chosen once per task version and run)."""
    run_id: str
    config: AuditConfig
    trials: Trials
    share: Callable[[Task], SharedTask]
    """The executor's `share_task`, for a copy of the task a probe makes."""

    @property
    def network_args(self) -> tuple[bool, str]:
        """The run's network as a work item takes it: (offline, runtime network)."""
        return self.config.offline, self.config.network.value

    def work(self, fn: Callable[..., Any], *args: Any) -> Work:
        """A work item of this task: `fn(shared task, *args, backend, run id, offline, network)`."""
        return Work(fn, (self.shared, *args, self.backend, self.run_id, *self.network_args), self.resources)
