"""Faults: SIGKILL of the driver at random points of rollouts and repair, a full and a read-only disk
under the ledger. After each, a rerun must find every invariant intact: no result lost or duplicated,
no orphan container, no half-written task version visible, and SQLite's integrity check passes."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from qaflow.ledger import Ledger
from qaflow.llm.config import ScriptedReply, ScriptedToolCall
from qaflow.models.frame import read_rollouts
from qaflow.task import Task
from tests.conftest import TASKS_REPO, require_backend
from tests.taskfactory import write_task

QAFLOW = str(Path(sys.executable).with_name("qaflow"))


def integrity(ledger_path: Path) -> str:
    conn = sqlite3.connect(ledger_path)
    try:
        return conn.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        conn.close()


def kill_after(args: list[str], seconds: float) -> None:
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    time.sleep(seconds)
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def rollout_pool(root: Path, n: int = 4) -> Path:
    for i in range(n):
        write_task(root, f"t{i}")
    return root


SCRIPT = [
    ScriptedReply(tool_calls=[ScriptedToolCall(name="bash", arguments={"command": "sleep 0.3"})]),
    ScriptedReply(tool_calls=[ScriptedToolCall(name="write", arguments={"path": "/app/out.txt", "content": "done"})]),
    ScriptedReply(content="done"),
]


@pytest.mark.parametrize(
    "backend", [pytest.param("bwrap", marks=pytest.mark.bwrap), pytest.param("docker", marks=pytest.mark.docker)]
)
def test_sigkill_during_rollouts_then_rerun_keeps_every_invariant(backend: str, tmp_path: Path) -> None:
    require_backend(backend)
    pool = rollout_pool(tmp_path / "pool")
    script = tmp_path / "script.json"
    script.write_text(json.dumps([r.model_dump() for r in SCRIPT]))
    args = [QAFLOW, "rollout", str(pool), "--model", "openai/scripted", "--script", str(script), "--efforts",
            "low,medium", "-k", "2", "-j", "2", "-b", backend]  # fmt: skip
    rng = random.Random(7)
    for _ in range(3):  # kill at random points, three times
        kill_after(args, rng.uniform(1.0, 4.0))
    done = subprocess.run(args, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    ledger_path = pool / ".qaflow" / "ledger.sqlite"
    assert integrity(ledger_path) == "ok"
    with Ledger(ledger_path) as ledger:
        records = ledger.rollouts()
        ids = [r.rollout_id for r in records]
        assert len(ids) == len(set(ids)) == 4 * 2 * 2  # nothing lost, nothing duplicated
        assert all(r.full_reward for r in records)
        assert all(run.ended_at is not None for run in ledger.runs())  # crashed runs were closed
        run_ids = [run.run_id for run in ledger.runs()]
    shards = read_rollouts(pool / ".qaflow" / "rollouts")
    assert sorted(shards["rollout_id"].to_list()) == sorted(ids)
    if backend == "docker":
        for run_id in run_ids:
            left = subprocess.run(
                ["docker", "ps", "-aq", "--filter", f"label=qaflow.run={run_id}"], capture_output=True, text=True
            )
            assert left.stdout.strip() == "", f"orphan containers of run {run_id} survived"


@pytest.mark.bwrap
def test_sigkill_during_repair_then_rerun_shows_no_half_written_version(tmp_path: Path) -> None:
    require_backend("bwrap")
    pool = tmp_path / "pool"
    for name in ("reconcile-bank-statement", "score-quiz", "rotate-backups", "csv-sum"):
        shutil.copytree(TASKS_REPO / name, pool / name)
    args = [QAFLOW, "repair", str(pool), "--backend", "bwrap", "--repeats", "2", "--max-mutants", "3"]
    rng = random.Random(11)
    for _ in range(3):
        kill_after(args, rng.uniform(2.0, 8.0))
    done = subprocess.run(args, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    ledger_path = pool / ".qaflow" / "ledger.sqlite"
    assert integrity(ledger_path) == "ok"
    with Ledger(ledger_path) as ledger:
        for version in ledger.versions():
            if version.status.value == "invalid":
                continue
            task = Task.load(pool / version.path, require_solution=False)
            assert task.version == version.version, f"{version.path}: the folder does not hash to its recorded version"
        results = ledger.results()
        keys = [(r.task_version, r.probe, r.attempt) for r in results]
        assert len(keys) == len(set(keys))
        accepted = {v.name for v in ledger.versions() if v.status.value == "accepted" and v.parent_version}
    assert {"qaflow/reconcile-bank-statement", "qaflow/score-quiz", "qaflow/rotate-backups"} <= accepted


@pytest.fixture
def small_disk(tmp_path: Path):
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=6m", "tmpfs", str(mount)], capture_output=True, text=True
    )
    if done.returncode != 0:
        pytest.fail(f"cannot mount a tmpfs for the disk-full test: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


@pytest.mark.bwrap
def test_full_and_read_only_disk_under_the_ledger_fail_clearly_without_corruption(small_disk: Path) -> None:
    require_backend("bwrap")
    for name in ("csv-sum", "fix-calc"):
        shutil.copytree(TASKS_REPO / name, small_disk / name)
    audit = [QAFLOW, "audit", str(small_disk), "--backend", "bwrap", "--repeats", "1", "--max-mutants", "2"]
    first = subprocess.run([*audit, "--force"], capture_output=True, text=True)
    assert first.returncode == 0, first.stderr
    ledger_path = small_disk / ".qaflow" / "ledger.sqlite"
    with Ledger(ledger_path) as ledger:
        before = {(r.task_version, r.probe, r.attempt) for r in ledger.results()}
    assert before

    filler = small_disk / "filler"
    subprocess.run(["dd", "if=/dev/zero", f"of={filler}", "bs=64k"], capture_output=True)
    full = subprocess.run([*audit, "--force"], capture_output=True, text=True)
    assert full.returncode != 0
    assert "error:" in full.stderr and "Traceback" not in full.stderr
    assert "full" in full.stderr
    filler.unlink()
    assert integrity(ledger_path) == "ok"
    with Ledger(ledger_path) as ledger:
        assert before <= {(r.task_version, r.probe, r.attempt) for r in ledger.results()}

    subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)
    read_only = subprocess.run([*audit, "--force"], capture_output=True, text=True)
    assert read_only.returncode != 0
    assert "error:" in read_only.stderr and "Traceback" not in read_only.stderr
    assert "read-only" in read_only.stderr
    subprocess.run(["mount", "-o", "remount,rw", str(small_disk)], check=True)
    assert integrity(ledger_path) == "ok"
    again = subprocess.run(audit, capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
