"""Turning a task into a `SandboxSpec`: task.toml resources override the default limits.

`[environment] runtime = "runsc"` (an extra field, kept by the task model) asks for gVisor on
the docker backend; `"runc"` (or no value) is docker's default runtime.

Network follows Harbor: builds have network, and so does the running sandbox unless the task says
`network_mode = "no-network"` (see `TaskConfig.agent_network`). `allowlist` is refused: qaflow
cannot enforce `allowed_hosts` and never widens it to full network. A run can override both
(`RunNetwork`): `offline` builds without network, `network = none` keeps every sandbox offline.
"""

from __future__ import annotations

import os
from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from qaflow.errors import TaskError, UnsupportedError
from qaflow.sandbox.base import Limits, Runtime, SandboxSpec, parse_runtime
from qaflow.sandbox.build_network import build_network_need
from qaflow.task import NetworkMode, Task

OFFLINE_ENV = "QAFLOW_OFFLINE"
NETWORK_ENV = "QAFLOW_NETWORK"
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("", "0", "false", "no", "off")


class RuntimeNetwork(StrEnum):
    TASK = "task"
    """As each task declares (Harbor: network unless `no-network`)."""
    NONE = "none"
    """No network for any sandbox of the run."""


def offline_from_env() -> bool:
    """`QAFLOW_OFFLINE` as a bool (unset: False).

    Raises:
        ValueError: for a value that is not a boolean word.
    """
    value = os.environ.get(OFFLINE_ENV, "").strip().lower()
    if value not in _TRUE + _FALSE:
        raise ValueError(f"{OFFLINE_ENV}={value!r}: expected 1 or 0")
    return value in _TRUE


def network_from_env() -> RuntimeNetwork:
    """`QAFLOW_NETWORK` (unset: task).

    Raises:
        ValueError: for a value other than task or none.
    """
    value = os.environ.get(NETWORK_ENV, "").strip().lower() or RuntimeNetwork.TASK.value
    try:
        return RuntimeNetwork(value)
    except ValueError as exc:
        raise ValueError(f"{NETWORK_ENV}={value!r}: expected task or none") from exc


class RunNetwork(BaseModel):
    """A run's network settings over what each task declares; the defaults come from the environment."""

    model_config = ConfigDict(frozen=True)

    offline: bool = Field(default_factory=offline_from_env, description="Build without network (--offline)")
    network: RuntimeNetwork = Field(
        default_factory=network_from_env, description="Runtime network: task (as declared) or none (--network)"
    )


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


def _workdir(task: Task) -> str | None:
    """`[environment] workdir` (Harbor): an absolute container path over the image's WORKDIR.

    Raises:
        TaskError: for a value that is not an absolute path.
    """
    value = task.config.environment.workdir
    if value is None:
        return None
    if not isinstance(value, str) or not value.startswith("/") or "\0" in value:
        raise TaskError(task.path / "task.toml", f"[environment] workdir must be an absolute path, not {value!r}")
    return value


def check_task_network(task: Task) -> None:
    """Refuse a phase whose network mode is `allowlist`.

    Raises:
        UnsupportedError: naming task.toml, the allowed hosts and what to declare instead.
    """
    config = task.config
    for phase in (config.agent, config.verifier):
        mode, hosts = config.network_policy(phase)
        if mode is NetworkMode.ALLOWLIST:
            raise UnsupportedError(
                f"{task.path / 'task.toml'}: network_mode = 'allowlist' (allowed_hosts: {', '.join(hosts) or 'none'}) "
                "is not enforced by qaflow; declare 'public' or 'no-network'"
            )


def spec_for_task(
    task: Task, *, run_id: str = "adhoc", defaults: Limits | None = None, network: RunNetwork | None = None
) -> SandboxSpec:
    """The spec of `task`'s agent sandbox: default limits overridden by task.toml, network by the
    task's declaration and the run's `network` (default: from `QAFLOW_OFFLINE`/`QAFLOW_NETWORK`).

    Raises:
        TaskError: for an unknown `[environment] runtime`.
        UnsupportedError: for `network_mode = "allowlist"`, unless the run has no network at all.
        ValueError: for a malformed `QAFLOW_OFFLINE`/`QAFLOW_NETWORK` when `network` is None.
    """
    run = network if network is not None else RunNetwork()
    forced_off = run.network is RuntimeNetwork.NONE
    if not forced_off:
        check_task_network(task)
    env_cfg = task.config.environment
    limits = (defaults or Limits()).model_copy()
    if env_cfg.cpus:
        limits.cpus = float(env_cfg.cpus)
    if env_cfg.memory_mb:
        limits.memory_mb = int(env_cfg.memory_mb)
    if env_cfg.storage_mb:
        limits.storage_mb = int(env_cfg.storage_mb)
    needs_network = task.config.declares_public_network() or build_network_need(task.dockerfile) is not None
    return SandboxSpec(
        name=task.name,
        context_dir=task.environment_dir,
        env_hash=task.env_hash,
        docker_image=env_cfg.docker_image if not task.dockerfile.is_file() else None,
        network=task.config.agent_network() and not forced_off,
        build_network=not run.offline and needs_network,
        build_network_guessed=not run.offline and not needs_network,
        network_declared=task.config.declares_public_network(),
        network_forced_off=forced_off,
        env=dict(env_cfg.env),
        workdir=_workdir(task),
        limits=limits,
        run_id=run_id,
        build_timeout_sec=env_cfg.build_timeout_sec,
        runtime=task_runtime(task),
    )
