"""Sandbox backends, registered by name and imported lazily (this module never imports the docker SDK).

A backend name may carry a runtime: `docker:runsc` is the docker backend with every container
under gVisor. That spelling is how a run-wide runtime travels through every layer that passes a
backend name along (trials, audits, rollouts) and is recorded with each result; a task can also
ask for it itself (`[environment] runtime = "runsc"`, see `spec.spec_for_task`).
"""

from __future__ import annotations

import importlib
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from qaflow.errors import SandboxUnavailableError, UnsupportedError
from qaflow.sandbox.base import ExecResult, Limits, Runtime, Sandbox, SandboxBackend, SandboxSpec, parse_runtime

if TYPE_CHECKING:
    from qaflow.sandbox.bwrap.backend import BwrapBackend
    from qaflow.sandbox.docker.backend import DockerBackend

BackendName = Literal["auto", "docker", "bwrap"]

_BACKENDS: dict[str, str] = {
    "docker": "qaflow.sandbox.docker.backend:DockerBackend",
    "bwrap": "qaflow.sandbox.bwrap.backend:BwrapBackend",
}
RUNTIME_BACKEND = "docker"
"""The only backend that takes a runtime."""
_BUILTIN_BACKENDS = frozenset(_BACKENDS)


def register_backend(name: str, target: str) -> None:
    """Register the backend class at `target` ("module:attr", imported when first used) under `name`: test
    doubles and plugins. The class is a `SandboxBackend` (`qaflow.sandbox.base`).

    Raises:
        ValueError: `name` is docker or bwrap (never replaced), or not a plain name, or `target` is not "module:attr".
    """
    if name in _BUILTIN_BACKENDS:
        raise ValueError(f"backend {name!r} is built in and cannot be replaced")
    if not name or not name.replace("-", "").replace("_", "").isalnum() or name == "auto":
        raise ValueError(f"backend name {name!r}: use letters, digits, - and _ (and not auto)")
    module_name, sep, attr = target.partition(":")
    if not (module_name and sep and attr):
        raise ValueError(f"backend target {target!r}: expected 'module:attr'")
    _BACKENDS[name] = target


def split_backend(name: str) -> tuple[str, Runtime | None]:
    """`docker:runsc` -> ("docker", "runsc"); `bwrap` -> ("bwrap", None).

    Raises:
        SandboxUnavailableError: for an unknown runtime.
    """
    base, _, runtime = name.partition(":")
    try:
        return base, parse_runtime(runtime or None)
    except ValueError as exc:
        raise SandboxUnavailableError(f"backend {name!r}: {exc}") from exc


def with_runtime(backend: str, runtime: str | None) -> str:
    """The backend name that runs `backend` under `runtime` (`auto` + runsc is `docker:runsc`).

    Raises:
        UnsupportedError: a runtime for the bwrap backend.
        SandboxUnavailableError: an unknown runtime or backend.
    """
    base, current = split_backend(backend)
    try:
        wanted = parse_runtime(runtime) or current
    except ValueError as exc:
        raise SandboxUnavailableError(str(exc)) from exc
    if wanted is None:
        return base
    if base not in ("auto", RUNTIME_BACKEND):
        raise UnsupportedError(f"runtime {wanted} (gVisor) runs under the docker backend only, not {base}")
    return f"{RUNTIME_BACKEND}:{wanted}"


def backend_class(name: str) -> type[SandboxBackend]:
    """The backend class registered under `name` (a `:runtime` suffix is ignored)."""
    base = name.partition(":")[0]
    if base not in _BACKENDS:
        raise SandboxUnavailableError(f"unknown sandbox backend {name!r}; choose one of {sorted(_BACKENDS)}")
    module_name, _, attr = _BACKENDS[base].partition(":")
    found: type[SandboxBackend] = getattr(importlib.import_module(module_name), attr)
    return found


def docker_backend() -> type[DockerBackend]:
    """The docker backend's class, for what only it does (runtimes, stand-ins' userlands)."""
    from qaflow.sandbox.docker.backend import DockerBackend

    return DockerBackend


def bwrap_backend() -> type[BwrapBackend]:
    """The bwrap backend's class, for what only it does (declining a task, the host's Python)."""
    from qaflow.sandbox.bwrap.backend import BwrapBackend

    return BwrapBackend


def check_backend(name: str) -> tuple[bool, str]:
    """(works, reason) for one backend on this machine; `docker:runsc` also starts a container under runsc."""
    base, runtime = split_backend(name)
    if runtime is None:
        return backend_class(base).check()
    return check_runtime(runtime)


def check_runtime(runtime: str) -> tuple[bool, str]:
    """(works, reason): does the docker backend work and start containers under `runtime`?"""
    return docker_backend().check_runtime(runtime)


def resolve_backend(name: str = "auto", runtime: str | None = None) -> str:
    """`auto` is docker when a daemon answers, else bwrap; raises when neither works.

    With a runtime (in `name`, as `docker:runsc`, or given) the answer is `docker:<runtime>`,
    after checking that containers start under it.

    Raises:
        SandboxUnavailableError: no backend works, or the runtime does not.
        UnsupportedError: a runtime asked of the bwrap backend.
    """
    name = with_runtime(name, runtime)
    base, wanted = split_backend(name)
    if wanted is not None:
        ok, reason = check_runtime(wanted)
        if not ok:
            raise SandboxUnavailableError(f"runtime {wanted} does not work here: {reason}")
        return name
    if base != "auto":
        backend_class(base)
        return base
    reasons = []
    for candidate in ("docker", "bwrap"):
        ok, reason = check_backend(candidate)
        if ok:
            return candidate
        reasons.append(f"{candidate}: {reason}")
    raise SandboxUnavailableError("no sandbox backend works here: " + "; ".join(reasons))


def reap_run(run_id: str | None = None) -> int:
    """Remove what the sandboxes of `run_id` (all runs when None) left, on every backend that works here."""
    return sum(backend_class(name).reap(run_id) for name in _BACKENDS if check_backend(name)[0])


def open_sandbox(spec: SandboxSpec, backend: str = "auto") -> Sandbox:
    """Build (cached) and start a sandbox for `spec` on the chosen backend.

    The runtime is the spec's (the task asked) or else the backend name's (the run asked).

    Raises:
        UnsupportedError: a runtime on the bwrap backend.
    """
    base, runtime = split_backend(resolve_backend(backend, spec.runtime))
    if runtime != spec.runtime:
        spec = spec.model_copy(update={"runtime": runtime})
    box: Sandbox = backend_class(base)().open(spec)
    make_log_dirs(box)
    return box


LOG_DIRS = ("/logs/agent", "/logs/verifier", "/logs/artifacts")
"""What Harbor mounts into the environment for the whole trial: they exist (empty, writable by any user)
before the agent starts. The verifier still gets /logs/verifier emptied before it runs."""


def make_log_dirs(box: Sandbox) -> None:
    """Create `LOG_DIRS` in `box` (sent with its next exec on docker: no extra round trip)."""
    with tempfile.TemporaryDirectory(prefix="qaflow-logs-") as tmp:
        empty = Path(tmp)
        empty.chmod(0o777)
        for folder in LOG_DIRS:
            box.put(folder, empty)


__all__ = [
    "BackendName",
    "ExecResult",
    "Limits",
    "Runtime",
    "Sandbox",
    "SandboxSpec",
    "backend_class",
    "check_backend",
    "check_runtime",
    "open_sandbox",
    "reap_run",
    "resolve_backend",
    "split_backend",
    "with_runtime",
]
