"""SIGKILL in the middle of a run: `qaflow sandbox reap` leaves no container, the ledger opens cleanly,
and under bwrap nothing of the sandbox outlives its parent."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid
from pathlib import Path

import pytest
from typer.testing import CliRunner

from qaflow.cli import app
from qaflow.ledger import Ledger
from qaflow.sandbox.bwrap.backend import TEMP_PREFIX
from tests.conftest import TASKS_REPO, require_backend

CHILD = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from qaflow.ledger import Ledger
    from qaflow.models.records import RunKind
    from qaflow.sandbox import open_sandbox
    from qaflow.sandbox.spec import spec_for_task
    from qaflow.task import Task

    backend, ledger_path, run_id, marker = sys.argv[1:5]
    ledger = Ledger(Path(ledger_path))
    run = ledger.start_run(RunKind.AUDIT, {"backend": backend})
    task = Task.load("TASK")
    box = open_sandbox(spec_for_task(task, run_id=run_id), backend)
    Path(marker).write_text(run.run_id)
    box.exec("echo $$ > /app/pid; sleep 1987", timeout=600)
    """
).replace("TASK", str(TASKS_REPO / "csv-sum"))


def _start_and_kill(backend: str, tmp_path: Path) -> tuple[str, Path, int]:
    run_id = "crash-" + uuid.uuid4().hex[:8]
    marker = tmp_path / "started"
    ledger_path = tmp_path / "ledger.sqlite"
    proc = subprocess.Popen([sys.executable, "-c", CHILD, backend, str(ledger_path), run_id, str(marker)])
    deadline = time.monotonic() + 120
    while not marker.exists():
        assert proc.poll() is None, f"child exited early with {proc.returncode}"
        assert time.monotonic() < deadline, "child never started its sandbox"
        time.sleep(0.1)
    time.sleep(1.0)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    return run_id, ledger_path, proc.pid


def _ledger_is_clean(ledger_path: Path) -> None:
    ledger = Ledger(ledger_path)
    try:
        runs = ledger.runs()
        assert len(runs) == 1 and runs[0].ended_at is None
        assert ledger.frame("runs").height == 1
    finally:
        ledger.close()


@pytest.mark.docker
def test_sigkill_mid_run_then_reap_leaves_no_container(tmp_path: Path):
    require_backend("docker")
    import docker

    run_id, ledger_path, _pid = _start_and_kill("docker", tmp_path)
    client = docker.from_env()
    label = {"label": f"qaflow.run={run_id}"}
    assert len(client.containers.list(all=True, filters=label)) == 1, "the orphan should exist before reaping"
    out = CliRunner().invoke(app, ["sandbox", "reap", "--run", run_id, "--json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.output)["removed"]["docker"] == 1
    assert client.containers.list(all=True, filters=label) == []
    _ledger_is_clean(ledger_path)


@pytest.mark.docker
def test_reap_without_a_run_leaves_the_containers_of_live_processes(tmp_path: Path):
    """A reap beside a running audit must not take its sandboxes: only containers whose starting process is
    gone (or that predate the owner label) go."""
    require_backend("docker")
    from qaflow.sandbox.docker.backend import BASE_IMAGE, OWNER_LABEL, RUN_LABEL, DockerBackend, owner

    dead_owner = owner().rsplit(":", 1)[0] + f":{_dead_pid()}"
    api = DockerBackend().client.api
    made = {
        who: api.create_container(
            BASE_IMAGE, ["sleep", "60"], labels={RUN_LABEL: f"reap-test-{who}", OWNER_LABEL: label}
        )["Id"]
        for who, label in (("live", owner()), ("dead", dead_owner))
    }
    try:
        removed = DockerBackend.reap()
        left = {c["Id"] for c in api.containers(all=True, filters={"label": RUN_LABEL})}
        assert made["live"] in left and made["dead"] not in left and removed >= 1
        assert DockerBackend.reap("reap-test-live") == 1  # named explicitly, it goes
    finally:
        for container in made.values():
            with contextlib.suppress(Exception):
                api.remove_container(container, force=True)


def _dead_pid() -> int:
    """A pid that no longer runs."""
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


@pytest.mark.bwrap
def test_sigkill_mid_run_kills_the_bwrap_sandbox(tmp_path: Path):
    require_backend("bwrap")
    _run_id, ledger_path, pid = _start_and_kill("bwrap", tmp_path)
    deadline = time.monotonic() + 10
    while True:
        leftovers = subprocess.run(["pgrep", "-f", "sleep 1987"], capture_output=True, text=True).stdout.split()
        if not leftovers or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert leftovers == [], "a process of the killed run's sandbox survived its parent"
    stale = list(Path(tempfile.gettempdir()).glob(f"{TEMP_PREFIX}{pid}-*"))
    assert stale, "the killed run should have left its sandbox folder behind"
    out = CliRunner().invoke(app, ["sandbox", "reap", "--json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.output)["removed"]["bwrap"] >= len(stale)
    assert not any(p.exists() for p in stale)
    _ledger_is_clean(ledger_path)
