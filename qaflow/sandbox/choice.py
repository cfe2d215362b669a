"""`--backend auto`, task by task: bwrap where the host's root stands for the image docker would run, docker
everywhere else.

A bwrap trial costs a fraction of a docker one (`bench/sandbox_overhead.py`), but bwrap runs the host's own
root. It stands for docker's run of a task only when all of these hold (else the task goes to docker, with the
reason recorded):
- bwrap builds the Dockerfile as it is (`BwrapBackend.declines`: the subset, no system packages, a FROM whose
  distribution and Python are the host's, no runtime, no network the task declares), and the verifier runs in
  the agent's sandbox;
- docker would itself run the offline base image for that FROM (a stand-in, `qaflow/base`), not an image this
  machine holds under that name (then docker runs the real one);
- nothing the task's files name (`userland.task_uses`: programs in command position, imported modules) is
  something the host has and the base image lacks (`git`, `gcc`, the host's Python packages): such a task
  would pass on the host where its image fails.
Where only one backend works, `auto` is that one for every task. An explicit backend or a runtime is never
second-guessed.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from qaflow.errors import QaflowError
from qaflow.sandbox import bwrap_backend, check_backend, docker_backend, resolve_backend, split_backend, with_runtime
from qaflow.sandbox.base import SandboxSpec
from qaflow.sandbox.dockerfile import plan_build
from qaflow.sandbox.userland import host_only, host_userland, task_uses
from qaflow.task import Task, VerifierEnvironmentMode

WORKS_TTL_S = 60.0
"""How long a backend check is trusted before `auto` asks again."""
BASE_REPO = "qaflow/base"
OWNERSHIP_COMMANDS = frozenset(
    {"chown", "chgrp", "tar", "su", "runuser", "setpriv", "useradd", "usermod", "groupadd", "adduser", "install"}
)
"""Programs that set files' owners or switch users (tar extracting as root keeps the archive's owners): bwrap's
user namespace maps root alone, so they fail there where docker runs them."""
AUTO_LABEL = "auto"
"""How a run names its backend where `auto` picks one per task."""

_works: dict[str, tuple[float, bool]] = {}
_chosen: dict[tuple[object, ...], BackendChoice] = {}
_lock = threading.Lock()


@dataclass(frozen=True)
class BackendChoice:
    backend: str
    why: str
    """Why this backend: for docker under `auto`, what bwrap could not stand for."""


def backend_for_task(task: Task, spec: SandboxSpec, name: str = "auto") -> str:
    """The backend `task` (opened as `spec`) runs on when the run asks for `name`."""
    return choose_backend(task, spec, name).backend


def choose_backend(task: Task, spec: SandboxSpec, name: str = "auto") -> BackendChoice:
    """`name` resolved for one task, with the reason (module docstring).

    Raises:
        SandboxUnavailableError: no backend works, or the one asked for does not.
    """
    base, runtime = split_backend(with_runtime(name, spec.runtime))
    if base != "auto" or runtime is not None:
        return BackendChoice(resolve_backend(name, spec.runtime), "asked for")
    if not (_working("docker") and _working("bwrap")):
        return BackendChoice(resolve_backend("auto"), "the only backend that works here")
    key = (spec.env_hash, spec.runtime_network, spec.network_declared, task.path, task.version)
    with _lock:
        known = _chosen.get(key)
    if known is None:
        why = docker_reason(task, spec)
        known = BackendChoice("docker", why) if why else BackendChoice("bwrap", "bwrap reproduces its image")
        with _lock:
            _chosen[key] = known
    return known


def run_label(name: str) -> str:
    """What a run that asks for `name` runs on, in words: the backend, or `auto` where it picks per task.

    Raises:
        SandboxUnavailableError: no backend works, or the one asked for does not.
    """
    resolved = resolve_backend(name)
    if split_backend(name) == ("auto", None) and _working("docker") and _working("bwrap"):
        return AUTO_LABEL
    return resolved


def docker_reason(task: Task, spec: SandboxSpec) -> str | None:
    """Why bwrap cannot stand for docker's run of `task` (None: it can)."""
    if task.verifier_mode is VerifierEnvironmentMode.SEPARATE:
        return "the verifier runs in its own image"
    bwrap = bwrap_backend()
    declined: str | None = bwrap.declines(spec)
    if declined is not None:
        return declined
    try:
        base = plan_build(spec.dockerfile, spec.context_dir).base
    except QaflowError as e:
        return str(e).splitlines()[0]
    if base is None:
        return "the Dockerfile names no FROM image"
    docker = docker_backend()()
    target = docker.from_target(base)
    if target is None:
        return None  # docker cannot build it at all here; bwrap can
    if not target.startswith(BASE_REPO + ":"):
        return f"docker runs {target} for FROM {base}, not the offline base bwrap stands for"
    image = docker.userland(target)
    python = bwrap.host_python()
    host = host_userland(python) if python else None
    if image is None or host is None:
        return f"the programs of {target} or of this host could not be listed"
    uses = task_uses([task.path])
    owners = sorted(uses.commands & OWNERSHIP_COMMANDS)
    if owners:
        return f"the task runs {', '.join(owners)}: bwrap maps only root, so changing a file's owner fails there"
    extra = host_only(uses, host, image)
    if extra:
        shown = ", ".join(extra[:5]) + (", ..." if len(extra) > 5 else "")
        return f"the task uses {shown}, which this host has and {target} (for FROM {base}) lacks"
    return None


def _working(name: str) -> bool:
    now = time.monotonic()
    with _lock:
        seen = _works.get(name)
    if seen is not None and now - seen[0] < WORKS_TTL_S:
        return seen[1]
    ok = check_backend(name)[0]
    with _lock:
        _works[name] = (now, ok)
    return ok
