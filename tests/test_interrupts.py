"""SIGINT and SIGTERM stop a run cleanly: scheduling stops, trials in flight end within seconds and leave no
sandbox, nothing cut short is recorded, what finished is reported, the exit status is 130 (143), and a
rerun resumes to the verdicts an uninterrupted audit gives."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import shutil
import signal
import subprocess
import sys
import termios
import threading
import time
from pathlib import Path
from typing import Any

import docker
import pytest

from qaflow import interrupts
from qaflow.audit.probes.context import Work
from qaflow.audit.runner import AuditConfig, Auditor
from qaflow.executors import LocalExecutor
from qaflow.ledger import Ledger
from qaflow.models.audit import TaskAudit, Verdict
from qaflow.pool import Pool
from qaflow.sandbox.docker.backend import RUN_LABEL
from tests.conftest import REPO, TASKS_REPO, require_backend
from tests.taskfactory import write_task
from tests.test_audit_labels import OFFLINE, error_codes, expected_codes

QAFLOW = [str(Path(sys.executable).with_name("qaflow"))]
TASKS = ["csv-sum", "dedupe-mailing-list", "convert-temperatures", "config-migrate"]
"""Two controls and two defects of the bundled pool: enough trials that a stop lands mid-run."""
STOP_WITHIN_S = 8.0
"""From the signal to the process gone, trials in flight killed (a loaded 2-core machine)."""


def test_the_first_signal_asks_for_a_stop_a_second_stops_at_once_and_handlers_come_back() -> None:
    before = signal.getsignal(signal.SIGTERM)
    with interrupts.stop_on_signals():
        assert interrupts.requested() is None
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.05)
        assert interrupts.requested() == signal.SIGTERM
        with pytest.raises(interrupts.Interrupted) as stop:
            interrupts.check(["finished"])
        assert stop.value.exit_status == 143 and stop.value.done == ["finished"]
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)
    assert signal.getsignal(signal.SIGTERM) is before and interrupts.requested() is None
    interrupts.check()  # nothing asked for outside the block


def test_a_signal_the_process_ignores_stays_ignored() -> None:
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with interrupts.stop_on_signals():
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)
            assert interrupts.requested() is None
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)


def _steps(name: str, seconds: list[float], recorded: list[str]) -> Any:
    """A task's steps: one work item per entry of `seconds` (one phase each), its result recorded by the driver."""
    for i, s in enumerate(seconds):
        yield [Work(time.sleep, (s,), record=lambda _r, i=i: recorded.append(f"{name}:{i}"))]
    return TaskAudit(task=name, path=name, version=None, verdict=Verdict.ACCEPTED, findings=[])


def test_the_driver_records_nothing_after_a_stop_and_leaves_with_what_finished(tmp_path: Path) -> None:
    recorded: list[str] = []
    with Ledger(tmp_path / "ledger.sqlite") as ledger, LocalExecutor(2) as executor:
        auditor = Auditor(ledger, "run-1", AuditConfig(backend="bwrap"), executor=executor)
        original = executor.wait

        def wait(handles: Any, timeout: float | None = None) -> list[Any]:
            done = original(handles, timeout)
            if "quick:0" in recorded:  # the quick task finished: the signal comes now
                interrupts.request(signal.SIGINT)
            return done

        executor.wait = wait  # type: ignore[method-assign]
        try:
            with pytest.raises(interrupts.Interrupted) as stop:
                auditor._drive([_steps("quick", [0.0], recorded), _steps("slow", [0.3, 5.0, 5.0], recorded)])
        finally:
            interrupts.clear()
    assert [a.task for a in stop.value.done] == ["quick"]
    assert recorded in (["quick:0"], ["quick:0", "slow:0"])  # slow's first phase may have ended before the stop
    assert "slow:1" not in recorded


def _pool(tmp_path: Path) -> Path:
    root = tmp_path / "pool"
    for name in TASKS:
        shutil.copytree(TASKS_REPO / name, root / name)
    return root


def _results(root: Path) -> int:
    ledger = root / ".qaflow" / "ledger.sqlite"
    if not ledger.is_file():
        return 0
    with Ledger(ledger) as opened:
        return len(opened.results())


def _wait_for_results(proc: subprocess.Popen[bytes], root: Path, at_least: int, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while _results(root) < at_least:
        assert proc.poll() is None, "the audit ended before it could be stopped"
        assert time.monotonic() < deadline, "the audit recorded too little to stop it mid-run"
        time.sleep(0.2)


def _audit_args(root: Path, backend: str, tmp_path: Path) -> list[str]:
    return [*QAFLOW, "audit", str(root), "--backend", backend, "--repeats", "2", *OFFLINE,
            "--json", str(tmp_path / "audit.json"), "--html", str(tmp_path / "audit.html")]  # fmt: skip


class Terminal:
    """A pseudo-terminal whose output is read all along (a full one would block the program writing to it)."""

    def __init__(self) -> None:
        self.master, self.slave = pty.openpty()
        self._chunks: list[bytes] = []
        self._reader = threading.Thread(target=self._read, daemon=True)

    def _read(self) -> None:
        while True:
            try:
                chunk = os.read(self.master, 65536)
            except OSError:  # EIO: the other end is closed and its last writer gone
                return
            if not chunk:
                return
            self._chunks.append(chunk)

    def start(self, args: list[str]) -> subprocess.Popen[bytes]:
        """Start `args` as the foreground job of this terminal (its own session), as a user's shell would."""

        def take_terminal() -> None:
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)

        proc = subprocess.Popen(args, stdin=self.slave, stdout=self.slave, stderr=self.slave, cwd=REPO,
                                start_new_session=True, preexec_fn=take_terminal)  # fmt: skip
        os.close(self.slave)
        self._reader.start()
        return proc

    def type(self, keys: bytes) -> None:
        os.write(self.master, keys)

    def output(self) -> str:
        """What was written to the terminal (the program has ended), without colours and cursor moves."""
        self._reader.join(timeout=10)
        os.close(self.master)
        return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", b"".join(self._chunks).decode(errors="replace"))


def _leftovers(backend: str, run_id: str, pid: int) -> list[str]:
    if backend == "docker":
        boxes = docker.from_env().containers.list(all=True, filters={"label": f"{RUN_LABEL}={run_id}"})
        return [b.name for b in boxes]
    return [p.name for p in Path("/tmp").glob(f"qaflow-bwrap-{pid}-*")]


def _stop(backend: str, proc: subprocess.Popen[bytes], terminal: Terminal | None) -> float:
    """Ctrl-C typed at the terminal (bwrap's run), or SIGTERM from a scheduler (docker's); returns when."""
    if terminal is not None:
        terminal.type(b"\x03")
    else:
        proc.send_signal(signal.SIGTERM)
    return time.monotonic()


@pytest.mark.timeout(900)
@pytest.mark.parametrize("backend", [pytest.param("bwrap", marks=pytest.mark.bwrap),
                                     pytest.param("docker", marks=pytest.mark.docker)])  # fmt: skip
def test_an_interrupted_audit_reports_what_finished_and_a_rerun_resumes_to_the_same_verdicts(
    backend: str, tmp_path: Path
) -> None:
    require_backend(backend)
    root = _pool(tmp_path)
    args = _audit_args(root, backend, tmp_path)
    log = tmp_path / "stopped.log"
    terminal = Terminal() if backend == "bwrap" else None
    with log.open("w") as out:
        if terminal is not None:
            proc = terminal.start(args)
        else:
            proc = subprocess.Popen(args, cwd=REPO, stdout=out, stderr=subprocess.STDOUT)
        _wait_for_results(proc, root, at_least=12)
        asked = _stop(backend, proc, terminal)
        rc = proc.wait(timeout=120)
    took = time.monotonic() - asked
    output = terminal.output() if terminal is not None else log.read_text()
    assert rc == (130 if backend == "bwrap" else 143), output
    assert took < STOP_WITHIN_S, f"{took:.1f} s from the signal to the exit"
    assert "interrupted:" in output and "rerun to resume" in output and "Traceback" not in output, output
    reported = json.loads((tmp_path / "audit.json").read_text())["tasks"]
    assert (tmp_path / "audit.html").is_file()

    with Pool.open(root) as pool:
        (run,) = pool.ledger.runs()
        first = pool.ledger.results(run_id=run.run_id)
    assert run.ended_at is not None, "the interrupted run is closed, not left for crash reaping"
    assert f"{len(reported)} task(s) audited, {len(first)} results recorded" in output
    assert len(reported) < len(TASKS) and len(first) >= 12
    assert _leftovers(backend, run.run_id, proc.pid) == []

    log = tmp_path / "rerun.log"
    with log.open("w") as out:
        rerun = subprocess.run(args, cwd=REPO, stdout=out, stderr=subprocess.STDOUT, timeout=600)
    text = log.read_text()
    assert rerun.returncode == 0, text
    counts = re.findall(r"^audit (\d+/\d+) ", text, flags=re.MULTILINE)  # a line per finished task, in a log file
    assert counts and counts[-1] == f"{len(TASKS)}/{len(TASKS)}", text
    audits = {Path(a["path"]).name: a for a in json.loads((tmp_path / "audit.json").read_text())["tasks"]}
    assert {n: error_codes(a) for n, a in audits.items()} == {n: expected_codes(n, backend) for n in TASKS}
    with Pool.open(root) as pool:
        kept = {(r.key.task_version, r.key.probe) for r in pool.ledger.results(run_id=run.run_id)}
    assert kept == {(r.key.task_version, r.key.probe) for r in first}, "the rerun lost what the stopped run recorded"


def _slow_pool(tmp_path: Path) -> Path:
    root = tmp_path / "pool"
    for name in "abcd":
        write_task(root, name)
    return root


SLOW_SOLVE = [
    {"tool_calls": [{"name": "bash", "arguments": {"command": "sleep 2; echo done > /app/out.txt"}}]},
    {"content": "wrote it"},
]


@pytest.mark.bwrap
@pytest.mark.timeout(300)
def test_an_interrupted_rollout_job_records_only_whole_attempts_and_a_rerun_finishes_the_rest(tmp_path: Path) -> None:
    require_backend("bwrap")
    root = _slow_pool(tmp_path)
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SLOW_SOLVE))
    args = [*QAFLOW, "rollout", "run", str(root), "--model", "openai/scripted", "--efforts", "low", "-k", "1",
            "-b", "bwrap", "--script", str(script)]  # fmt: skip
    terminal = Terminal()
    proc = terminal.start(args)
    deadline = time.monotonic() + 120
    while True:
        with Pool.open(root) as pool:
            if len(pool.ledger.rollouts()) >= 1:
                break
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.2)
    asked = _stop("bwrap", proc, terminal)
    rc = proc.wait(timeout=60)
    took = time.monotonic() - asked
    output = terminal.output()
    assert rc == 130 and took < STOP_WITHIN_S, output
    with Pool.open(root) as pool:
        records = pool.ledger.rollouts()
    assert 1 <= len(records) < 4 and all(r.passed for r in records), [(r.task, r.exit_status) for r in records]
    assert f"interrupted: {len(records)} results recorded; rerun to resume" in output
    log = tmp_path / "rerun.log"
    with log.open("w") as out:
        rerun = subprocess.run(args, cwd=REPO, stdout=out, stderr=subprocess.STDOUT, timeout=240)
    text = log.read_text()
    assert rerun.returncode == 0, text
    assert f"{4 - len(records)} attempts run (0 retried" in text and f"{len(records)} already recorded" in text
    assert sum(1 for line in text.splitlines() if line.startswith("rollout ") and " pass, " in line) == 4 - len(records)
    with Pool.open(root) as pool:
        assert len(pool.ledger.rollouts()) == 4 and all(r.passed for r in pool.ledger.rollouts())
