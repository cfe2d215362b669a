"""Sandbox backends, registered by name and imported lazily (this module never imports the docker SDK)."""

from __future__ import annotations

import importlib
from typing import Any, Literal

from qaflow.errors import SandboxUnavailableError
from qaflow.sandbox.base import ExecResult, Limits, Sandbox, SandboxSpec

BackendName = Literal["auto", "docker", "bwrap"]

_BACKENDS: dict[str, str] = {
    "docker": "qaflow.sandbox.docker:DockerBackend",
    "bwrap": "qaflow.sandbox.bwrap:BwrapBackend",
}


def backend_class(name: str) -> Any:
    """The backend class registered under `name`."""
    if name not in _BACKENDS:
        raise SandboxUnavailableError(f"unknown sandbox backend {name!r}; choose one of {sorted(_BACKENDS)}")
    module_name, _, attr = _BACKENDS[name].partition(":")
    return getattr(importlib.import_module(module_name), attr)


def check_backend(name: str) -> tuple[bool, str]:
    """(works, reason) for one backend on this machine."""
    return backend_class(name).check()


def resolve_backend(name: str = "auto") -> str:
    """`auto` is docker when a daemon answers, else bwrap; raises when neither works."""
    if name != "auto":
        backend_class(name)
        return name
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
    """Build (cached) and start a sandbox for `spec` on the chosen backend."""
    return backend_class(resolve_backend(backend))().open(spec)


__all__ = [
    "BackendName",
    "ExecResult",
    "Limits",
    "Sandbox",
    "SandboxSpec",
    "backend_class",
    "check_backend",
    "open_sandbox",
    "reap_run",
    "resolve_backend",
]
