"""Shared fixtures. Backends that do not work here are skipped locally, but fail under
QAFLOW_REQUIRE_BACKENDS=1 (set by .ci/run) so CI can never pass by skipping."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from qaflow.sandbox import Limits, SandboxSpec, check_backend, open_sandbox
from qaflow.sandbox.base import Sandbox
from qaflow.task import tree_hash
from tests.fake_sandbox import FakeBackend, Program

settings.register_profile("qaflow", derandomize=True, deadline=None, database=None)
settings.load_profile("qaflow")
"""Property tests draw the same examples on every run and machine (a failure reproduces; a loaded CI
machine cannot fail one on time): a test's own `@settings` overrides only what it names."""

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
    yield from _sandbox_factory(backend, tmp_path)


def _sandbox_factory(backend: str, tmp_path: Path) -> Iterator[SandboxFactory]:
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


FAKE = "fake"
"""The in-memory fake backend's registry name (`tests.fake_sandbox`)."""


@pytest.fixture
def fake_programs(monkeypatch: pytest.MonkeyPatch) -> dict[str, Program]:
    """The scripted programs (`tests.fake_sandbox.Program`) of fake sandboxes opened in this test: add to it."""
    programs: dict[str, Program] = {}
    monkeypatch.setattr(FakeBackend, "programs", programs)
    return programs


@pytest.fixture
def fake_backend(monkeypatch: pytest.MonkeyPatch) -> str:
    """Register the in-memory fake backend for this test (the registry is restored after it); its name."""
    import qaflow.sandbox as sandboxes

    monkeypatch.setattr(sandboxes, "_BACKENDS", dict(sandboxes._BACKENDS))
    sandboxes.register_backend(FAKE, "tests.fake_sandbox:FakeBackend")
    return FAKE


ANY_BACKENDS = [FAKE, *BACKENDS]


@pytest.fixture(params=[FAKE, *(pytest.param(b, marks=getattr(pytest.mark, b)) for b in BACKENDS)])
def any_backend(request: pytest.FixtureRequest) -> str:
    """`backend` plus the in-memory fake: for tests whose commands stay in the fake's shell subset."""
    if request.param == FAKE:
        return str(request.getfixturevalue("fake_backend"))
    require_backend(request.param)
    return str(request.param)


@pytest.fixture
def make_any_sandbox(any_backend: str, tmp_path: Path) -> Iterator[SandboxFactory]:
    """`make_sandbox` on `any_backend` (fake, docker, bwrap)."""
    yield from _sandbox_factory(any_backend, tmp_path)


LABELLED_FILES = frozenset(
    {
        "test_audit_labels.py",
        "test_audit_answers.py",
        "test_audit_git_history.py",
        "test_audit_expected.py",
        "test_audit_observe.py",
    }
)
"""The files that read the session's labelled audits (`tests.audit_runs`)."""
DOCKER_ONLY = frozenset({"tests/test_audit_expected.py"})
"""Labelled-audit files whose tests are docker's without a backend in their ids."""


def labelled_group(nodeid: str) -> str | None:
    """The xdist group of a test that reads a labelled audit: one per backend (`labelled-docker`,
    `labelled-bwrap`), so each backend's audit runs once, on one worker, beside the other's; None for others."""
    file = nodeid.split("::", 1)[0]
    if Path(file).name not in LABELLED_FILES:
        return None
    docker = "[docker" in nodeid or "-docker" in nodeid or file in DOCKER_ONLY
    return "labelled-docker" if docker else "labelled-bwrap"


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """Under `pytest -n N --dist loadfile`: each file on one worker (its module fixtures run once), but the tests
    that read a backend's labelled audit together (`labelled_group`)."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class FilesAndLabelledAudits(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return scope_of(nodeid)

    config.option.loadscopereorder = False  # the collection is in cost order already (`pytest_collection_modifyitems`)
    return FilesAndLabelledAudits(config, log)


def scope_of(nodeid: str) -> str:
    """The unit a worker gets whole: a test file, or a backend's labelled-audit group."""
    return labelled_group(nodeid) or nodeid.split("::", 1)[0]


MEASURED_S = {
    "labelled-bwrap": 340,
    "labelled-docker": 180,
    "tests/test_repair_exploits.py": 140,
    "tests/test_audit_in_process.py": 130,
    "tests/test_batch_job.py": 130,
    "tests/test_trust_matrix.py": 100,
    "tests/test_executors.py": 90,
    "tests/test_audit_steps.py": 80,
    "tests/test_fault_injection.py": 80,
    "tests/test_repair_rounds.py": 75,
    "tests/test_interrupts.py": 65,
    "tests/test_harden_process_chain.py": 65,
    "tests/test_pipeline.py": 60,
    "tests/test_audit_data_forge.py": 50,
    "tests/test_escape.py": 50,
}
"""Seconds the costliest scopes took in a full run on a 2-core machine (`--durations`, 2026-12-07): only their order
matters. Any other scope counts three seconds for each test in a real sandbox."""


def _costliest_first(items: list[pytest.Item]) -> None:
    """Order `items` so that the costliest scopes come first: the workers start on the long ones and finish
    together on the short ones (in the collection's order, a long file met last leaves the other worker idle)."""
    cost: dict[str, int] = {}
    for item in items:
        scope = scope_of(item.nodeid)
        sandboxed = any(item.get_closest_marker(m) for m in ("docker", "bwrap"))
        cost[scope] = cost.get(scope, 0) + (3 if sandboxed else 0)
    cost.update({scope: seconds for scope, seconds in MEASURED_S.items() if scope in cost})
    first_seen = {scope: i for i, scope in enumerate(dict.fromkeys(scope_of(i.nodeid) for i in items))}
    items.sort(key=lambda i: (-cost[scope_of(i.nodeid)], first_seen[scope_of(i.nodeid)]))


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the tests that read the labelled audits `labelled`, and tell `tests.audit_runs` which backends'
    labelled audits this session runs anyway, so tests that need some labelled tasks audited read them from
    that run."""
    from tests import audit_runs

    for item in items:
        if Path(item.nodeid.split("::", 1)[0]).name in LABELLED_FILES:
            item.add_marker(pytest.mark.labelled)
        if item.nodeid.startswith("tests/test_audit_labels.py::test_audit_finds_exactly_the_labelled_codes["):
            callspec = getattr(item, "callspec", None)
            if callspec is not None:
                audit_runs.SHARED.add(str(callspec.params["backend_name"]))
    if config.getvalue("dist") == "loadfile":
        _costliest_first(items)
