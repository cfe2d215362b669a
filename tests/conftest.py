"""Shared fixtures. Backends that do not work here are skipped locally, but fail under
QAFLOW_REQUIRE_BACKENDS=1 (set by .ci/run) so CI can never pass by skipping."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from qaflow.sandbox import Limits, SandboxSpec, check_backend, open_sandbox
from qaflow.sandbox.base import Sandbox
from qaflow.task import tree_hash

REPO = Path(__file__).resolve().parent.parent
TASKS_REPO = REPO / "tasks_repo"
BACKENDS = ["docker", "bwrap"]


def require_backend(name: str) -> None:
    ok, reason = check_backend(name)
    if ok:
        return
    if os.environ.get("QAFLOW_REQUIRE_BACKENDS") == "1":
        pytest.fail(f"backend {name} is required here but does not work: {reason}")
    pytest.skip(f"backend {name} unavailable: {reason}")


@pytest.fixture(params=[pytest.param(b, marks=getattr(pytest.mark, b)) for b in BACKENDS])
def backend(request: pytest.FixtureRequest) -> str:
    require_backend(request.param)
    return request.param


SandboxFactory = Callable[..., Sandbox]


@pytest.fixture
def make_sandbox(backend: str, tmp_path: Path) -> Iterator[SandboxFactory]:
    """Open a sandbox from a Dockerfile text and extra context files; all are closed at teardown."""
    opened: list[Sandbox] = []

    def factory(
        dockerfile: str = "FROM python:3.11-slim\nWORKDIR /app\n",
        files: dict[str, str] | None = None,
        network: bool = False,
        limits: Limits | None = None,
    ) -> Sandbox:
        ctx = tmp_path / f"ctx-{uuid.uuid4().hex[:8]}"
        ctx.mkdir()
        (ctx / "Dockerfile").write_text(dockerfile)
        for rel, text in (files or {}).items():
            (ctx / rel).parent.mkdir(parents=True, exist_ok=True)
            (ctx / rel).write_text(text)
        spec = SandboxSpec(
            name="conformance",
            context_dir=ctx,
            env_hash=tree_hash(ctx),
            network=network,
            limits=limits or Limits(),
            run_id="pytest",
        )
        box = open_sandbox(spec, backend)
        opened.append(box)
        return box

    yield factory
    for box in opened:
        box.close()
