"""SIGKILL in the middle of an audit, then a rerun: no probe result lost, none redone or duplicated,
no container left, and the audited task folders untouched."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from qaflow.ledger import Ledger
from qaflow.models.records import RunKind
from qaflow.task import tree_hash
from tests.conftest import TASKS_REPO, require_backend
from tests.fake_sandbox import Program

TASKS = ["csv-sum", "json-merge"]
AUDIT = [sys.executable, "-c", "from qaflow.cli import main; main()", "audit"]


def _results(ledger_path: Path) -> dict[tuple[str, str, int], str]:
    ledger = Ledger(ledger_path)
    try:
        return {(r.task_version, r.probe, r.attempt): r.created_at.isoformat() for r in ledger.results()}
    finally:
        ledger.close()


@pytest.mark.docker
def test_sigkill_mid_audit_then_rerun_loses_and_repeats_nothing(tmp_path: Path):
    require_backend("docker")
    import docker

    pool = tmp_path / "pool"
    for name in TASKS:
        shutil.copytree(TASKS_REPO / name, pool / name)
    hashes = {name: tree_hash(pool / name) for name in TASKS}
    ledger_path = pool / ".qaflow" / "ledger.sqlite"
    args = [str(pool), "--backend", "docker", "--repeats", "3", "--jobs", "2"]

    proc = subprocess.Popen([*AUDIT, *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 180
    while True:
        assert proc.poll() is None, "the audit finished before it could be killed; give it more work"
        if ledger_path.exists() and len(_results(ledger_path)) >= 6:
            break
        assert time.monotonic() < deadline, "the audit recorded nothing"
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    before = _results(ledger_path)
    ledger = Ledger(ledger_path)
    killed = [r.run_id for r in ledger.runs(RunKind.AUDIT) if r.ended_at is None]
    ledger.close()
    assert len(killed) == 1

    report = tmp_path / "audit.json"
    done = subprocess.run([*AUDIT, *args, "--json", str(report)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    after = _results(ledger_path)
    lost = {k for k in before if k not in after}
    redone = {k for k in before if k in after and after[k] != before[k]}
    assert lost == set() and redone == set()
    assert len(after) > len(before)
    probes = {(k[0], k[1].split(":")[0]) for k in after}
    assert {p for _, p in probes} >= {"build", "nop", "oracle", "tamper", "mutant"}

    client = docker.from_env()
    assert client.containers.list(all=True, filters={"label": f"qaflow.run={killed[0]}"}) == []
    ledger = Ledger(ledger_path)
    assert all(r.ended_at is not None for r in ledger.runs(RunKind.AUDIT))
    ledger.close()
    audits = json.loads(report.read_text())["tasks"]
    assert {a["verdict"] for a in audits} == {"accepted"}
    assert {name: tree_hash(pool / name) for name in TASKS} == hashes, "the audit modified a task folder"


def test_a_run_the_sandbox_failed_is_tried_again_by_the_next_audit(
    tmp_path: Path, fake_backend: str, fake_programs: dict[str, Program]
):
    # issue 41, item 3: a container killed mid-probe left an error row that every rerun reused
    from qaflow.audit.runner import AuditConfig
    from qaflow.audit.service import audit_folders
    from qaflow.errors import SandboxError
    from qaflow.models.records import FindingCode
    from qaflow.pool import Pool
    from tests.taskfactory import write_task

    def killed(box: object, argv: list[str], stdin: bytes, env: dict[str, str], cwd: str) -> tuple[int, bytes, bytes]:
        raise SandboxError("the container was killed (exit 137)")

    folder = write_task(tmp_path / "pool", "a")  # its verifier runs `cat`
    config = AuditConfig(backend=fake_backend, repeats=1, exhaustive=False)
    fake_programs["cat"] = killed
    with Pool.open(tmp_path / "pool") as pool:
        (first,) = audit_folders(pool, [folder], config).audits
    assert FindingCode.INFRA_ERROR in {f.code for f in first.findings}
    del fake_programs["cat"]
    with Pool.open(tmp_path / "pool") as pool:
        batch = audit_folders(pool, [folder], config)
        (second,) = batch.audits
        assert second.findings == [], "the cached sandbox errors were reused instead of run again"
        redone = pool.ledger.results(run_id=batch.run_id)
        assert redone and all(r.payload["error_kind"] is None for r in redone)


def test_a_run_the_sandbox_failed_once_is_tried_again_in_the_same_audit(
    tmp_path: Path, fake_backend: str, fake_programs: dict[str, Program]
):
    """A machine hiccup (one trial's sandbox failed) costs one more trial, not a finding or another audit."""
    from qaflow.audit.runner import AuditConfig
    from qaflow.audit.service import audit_folders
    from qaflow.errors import SandboxError
    from qaflow.pool import Pool
    from tests.taskfactory import write_task

    calls: list[bytes] = []

    def judge(box: object, argv: list[str], stdin: bytes, env: dict[str, str], cwd: str) -> tuple[int, bytes, bytes]:
        calls.append(stdin)
        if len(calls) == 1:
            raise SandboxError("the container was killed (exit 137)")
        return (0 if stdin == b"done\n" else 1), b"", b""

    test_sh = "#!/bin/bash\nif judge < /app/out.txt; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n"
    folder = write_task(tmp_path / "pool", "a", test_sh=test_sh)
    fake_programs["judge"] = judge
    with Pool.open(tmp_path / "pool") as pool:
        batch = audit_folders(pool, [folder], AuditConfig(backend=fake_backend, repeats=1, exhaustive=False))
        (audit,) = batch.audits
        results = pool.ledger.results(run_id=batch.run_id)
    assert audit.findings == [] and audit.verdict.value == "accepted", audit.findings
    assert all(r.payload.get("error_kind") is None for r in results if r.probe != "build")
