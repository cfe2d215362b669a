"""The one way a sandbox for a task is opened (a trial, the audit's differential runs, hardening's observation):
its spec, the backend chosen for it, then, before anything runs in it, the environment's own healthcheck."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from qaflow.healthcheck import wait_healthy
from qaflow.sandbox import Limits, open_sandbox
from qaflow.sandbox.base import Sandbox, SandboxSpec
from qaflow.sandbox.choice import backend_for_task
from qaflow.sandbox.spec import RunNetwork, spec_for_task
from qaflow.task import Task


def sandbox_plan(
    task: Task, *, backend: str, run_id: str, limits: Limits | None = None, network: RunNetwork | None = None
) -> tuple[SandboxSpec, str]:
    """The spec of the task's sandbox and the backend it runs on (`auto` chosen for the task).

    Raises:
        TaskError, UnsupportedError: the task asks for what no sandbox can give it.
    """
    spec = spec_for_task(task, run_id=run_id, defaults=limits, network=network)
    return spec, backend_for_task(task, spec, backend)


@contextmanager
def task_sandbox(task: Task, spec: SandboxSpec, backend: str) -> Iterator[Sandbox]:
    """A started sandbox of `spec` on `backend` (see `sandbox_plan`) whose environment is up: its
    `[environment.healthcheck]` passed. Closed on leaving.

    Raises:
        SetupError: the healthcheck never passed.
        SandboxError: the sandbox cannot start.
    """
    with open_sandbox(spec, backend) as box:
        check = task.config.environment.healthcheck
        if check:
            toml = task.path / "task.toml"
            wait_healthy(box, check, user=task.config.agent.user, toml=toml, what="[environment]")
        yield box
