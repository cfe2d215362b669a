"""One run per pool at a time: a second process is refused at once, naming the holder; nothing of the live
run is reaped; read-only commands still work; a killed holder leaves no stale lock."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from qaflow.cli import app
from qaflow.ledger.lock import PoolBusyError, lock_path, run_lock
from qaflow.models.records import RunKind
from qaflow.pool import Pool
from qaflow.sandbox.bwrap.sandbox import TEMP_PREFIX
from tests.conftest import REPO, require_backend
from tests.taskfactory import write_task

HOLD = """
import sys, time
from pathlib import Path
from qaflow.pool import Pool
from qaflow.sandbox.bwrap.sandbox import TEMP_PREFIX
from qaflow.models.records import RunKind
with Pool.open(sys.argv[1]) as pool, pool.ledger.run(RunKind.AUDIT, {"holder": True}) as run:
    Path(sys.argv[2]).write_text(run.run_id)
    while not Path(sys.argv[3]).exists():
        time.sleep(0.05)
"""


def hold(root: Path, tmp_path: Path) -> tuple[subprocess.Popen[bytes], str, Path]:
    """A process with an audit run open on the pool until `release` exists; returns it, its run id, `release`."""
    ready, release = tmp_path / "ready", tmp_path / "release"
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(root), str(ready), str(release)], cwd=REPO)
    deadline = time.monotonic() + 60
    while not ready.exists() or not ready.read_text():
        assert proc.poll() is None and time.monotonic() < deadline, "the holder did not start"
        time.sleep(0.05)
    return proc, ready.read_text(), release


def live_sandbox(backend: str, run_id: str, pid: int) -> tuple[Callable[[], bool], Callable[[], None]]:
    """What a live run's sandbox leaves on `backend` (a labelled container; a bwrap temp folder of its pid):
    whether it is still there, and how to remove it."""
    if backend == "docker":
        import docker

        from qaflow.sandbox.docker.backend import RUN_LABEL
        from qaflow.sandbox.docker.images import BASE_IMAGE

        box = docker.from_env().containers.run(BASE_IMAGE, ["sleep", "600"], detach=True, labels={RUN_LABEL: run_id})

        def running() -> bool:
            box.reload()
            return bool(box.status == "running")

        return running, lambda: box.remove(force=True)
    folder = Path(tempfile.gettempdir()) / f"{TEMP_PREFIX}{pid}-live"
    folder.mkdir()
    return folder.is_dir, lambda: shutil.rmtree(folder, ignore_errors=True)


def test_the_lock_is_reentrant_within_a_process_and_released_after(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.sqlite"
    seen: list[bool] = []

    def nested() -> None:
        with run_lock(ledger, "audit"):
            seen.append(True)

    with run_lock(ledger, "repair"):
        info = json.loads(lock_path(ledger).read_text())
        assert info["pid"] == os.getpid() and info["what"] == "repair"
        threads = [threading.Thread(target=nested) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert seen == [True] * 4
    assert lock_path(ledger).read_text() == ""  # released: nobody named


def test_a_second_process_is_refused_and_a_killed_holder_leaves_no_stale_lock(tmp_path: Path) -> None:
    root = tmp_path / "pool"
    write_task(root, "a")
    with Pool.open(root):
        pass
    proc, run_id, release = hold(root, tmp_path)
    try:
        with Pool.open(root) as pool:
            with pytest.raises(PoolBusyError) as busy, pool.ledger.run(RunKind.ROLLOUT):
                pass
            assert f"pid {proc.pid}" in str(busy.value) and "audit" in str(busy.value)
            assert str(root) in str(busy.value)
            (live,) = pool.ledger.runs()
            assert live.run_id == run_id and live.ended_at is None  # nothing recorded, the live run untouched
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    with Pool.open(root) as pool, pool.ledger.run(RunKind.ROLLOUT) as run:
        assert run.run_id != run_id
    release.touch()


@pytest.mark.parametrize("backend", [pytest.param("bwrap", marks=pytest.mark.bwrap),
                                     pytest.param("docker", marks=pytest.mark.docker)])  # fmt: skip
def test_a_second_audit_is_refused_without_reaping_the_live_one_then_runs_after(backend: str, tmp_path: Path) -> None:
    require_backend(backend)
    root = tmp_path / "pool"
    write_task(root, "a")
    with Pool.open(root):
        pass
    proc, run_id, release = hold(root, tmp_path)
    audit = ["audit", str(root), "--backend", backend, "--repeats", "1"]
    alive, remove = live_sandbox(backend, run_id, proc.pid)
    try:
        out = CliRunner().invoke(app, audit)
        assert out.exit_code == 2, out.output
        assert "another qaflow run holds this pool: audit (pid" in out.output and "Traceback" not in out.output
        assert alive(), "the refused audit reaped a sandbox of the live run"
        listed = CliRunner().invoke(app, ["pool", "list", "--pool", str(root), "--json"])  # read-only: works meanwhile
        assert listed.exit_code == 0, listed.output
        with Pool.open(root) as pool:
            (live,) = pool.ledger.runs()
            assert live.run_id == run_id and live.ended_at is None
    finally:
        remove()
        release.touch()
        proc.wait(timeout=60)
    out = CliRunner().invoke(app, audit)
    assert out.exit_code == 0, out.output
    with Pool.open(root) as pool:
        runs = pool.ledger.runs()
        assert len(runs) == 2 and all(r.ended_at is not None for r in runs)


def _ledger_rows(root: Path) -> tuple[list[object], list[object], list[object], list[object]]:
    with Pool.open(root) as pool:
        ledger = pool.ledger
        return ledger.versions(), ledger.status_log(), ledger.heads(), ledger.runs()


@pytest.mark.parametrize(
    "command",
    [
        ["audit", "{root}", "--backend", "bwrap", "--repeats", "1"],
        ["pool", "scan", "{root}"],
        ["repair", "{root}", "--backend", "bwrap", "--repeats", "1"],
    ],
    ids=["audit", "pool-scan", "repair"],
)
def test_a_refused_command_writes_nothing(command: list[str], tmp_path: Path) -> None:
    root = tmp_path / "pool"
    write_task(root, "a")
    with Pool.open(root) as pool:
        pool.scan()
    before = _ledger_rows(root)
    write_task(root, "b")  # a new task and an edited one: a scan would record both
    (root / "a" / "instruction.md").write_text("Write `done` to /app/out.txt, now.\n")
    proc, _, release = hold(root, tmp_path)
    try:
        out = CliRunner().invoke(app, [part.format(root=root) for part in command])
        assert out.exit_code == 2, out.output
        assert "another qaflow run holds this pool" in out.output
        assert out.output.count("\n") <= 3 and "Traceback" not in out.output, out.output
        versions, statuses, heads, runs = _ledger_rows(root)
        assert (versions, statuses, heads) == before[:3], "the refused command scanned the pool"
        assert len(runs) == 1
    finally:
        release.touch()
        proc.wait(timeout=60)


def test_an_audit_with_an_unknown_backend_records_no_run(tmp_path: Path) -> None:
    root = tmp_path / "pool"
    write_task(root, "a")
    out = CliRunner().invoke(app, ["audit", str(root), "--backend", "nosuch", "--repeats", "1"])
    assert out.exit_code == 2, out.output
    assert "nosuch" in out.output and "Traceback" not in out.output
    with Pool.open(root) as pool:
        assert pool.ledger.runs() == [] and pool.ledger.versions() == []
