"""Turning a task into a `SandboxSpec`: task.toml resources override the default limits.

`[environment] runtime = "runsc"` (an extra field, kept by the task model) asks for gVisor on
the docker backend; `"runc"` (or no value) is docker's default runtime.
"""

from __future__ import annotations

from qaflow.errors import TaskError
from qaflow.sandbox.base import Limits, Runtime, SandboxSpec, parse_runtime
from qaflow.task import Task


def task_runtime(task: Task) -> Runtime | None:
    """The runtime `[environment] runtime` asks for.

    Raises:
        TaskError: for an unknown runtime name.
    """
    extra = task.config.environment.model_extra or {}
    try:
        return parse_runtime(extra.get("runtime"), "[environment] runtime")
    except ValueError as exc:
        raise TaskError(task.path / "task.toml", str(exc)) from exc


def spec_for_task(task: Task, *, run_id: str = "adhoc", defaults: Limits | None = None) -> SandboxSpec:
    """The spec of `task`'s agent sandbox: default limits overridden by task.toml.

    Raises:
        TaskError: for an unknown `[environment] runtime`.
    """
    env_cfg = task.config.environment
    limits = (defaults or Limits()).model_copy()
    if env_cfg.cpus:
        limits.cpus = float(env_cfg.cpus)
    if env_cfg.memory_mb:
        limits.memory_mb = int(env_cfg.memory_mb)
    if env_cfg.storage_mb:
        limits.storage_mb = int(env_cfg.storage_mb)
    return SandboxSpec(
        name=task.name,
        context_dir=task.environment_dir,
        env_hash=task.env_hash,
        docker_image=env_cfg.docker_image if not task.dockerfile.is_file() else None,
        network=task.config.agent_network(),
        env=dict(env_cfg.env),
        limits=limits,
        run_id=run_id,
        build_timeout_sec=env_cfg.build_timeout_sec,
        runtime=task_runtime(task),
    )
