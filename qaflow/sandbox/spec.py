"""Turning a task into a `SandboxSpec`: task.toml resources override the default limits."""

from __future__ import annotations

from qaflow.sandbox.base import Limits, SandboxSpec
from qaflow.task import Task


def spec_for_task(task: Task, *, run_id: str = "adhoc", defaults: Limits | None = None) -> SandboxSpec:
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
    )
