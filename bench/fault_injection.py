"""Audits of a labelled pool under injected faults: after a plain rerun, is every verdict the uninterrupted run's,
and does the ledger hold only results that happened?

A baseline `qaflow audit` runs uninterrupted on a fresh copy of the pool. Then each round audits another fresh
copy while faults land at random moments of the run (seeded):

- `sigkill`: SIGKILL of the audit's whole process group; the audit is started again at once (as a user would);
- `kill`: `docker kill` of one of the run's containers (labelled `qaflow.run`), as an OOM killer or an operator;
- `pause`: `docker pause` of one of them, never unpaused (a stalled container: the harness must notice).

After the faults the audit runs to its end, then a plain rerun (no `--force`) writes the final report. Checked
per round: each task's verdict and error codes equal the baseline's; the ledger passes SQLite's integrity check,
every run is closed, every result belongs to a recorded run, and no result the final state keeps is a trial
whose sandbox failed (`qaflow.audit.recorded.failed_sandbox`: those are retried, never reused as outcomes), and no
container of its runs is left (paused or not).

Usage: python bench/fault_injection.py [--backend docker] [--rounds 3] [--faults 4] [--seed 7] [--tasks a,b]
Prints a line per round and the totals; exits 1 when a verdict differs or an invariant fails.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
QAFLOW = str(Path(sys.executable).parent / "qaflow")
POOL = REPO / "tasks_repo"
TASKS = ["csv-sum", "fix-calc", "score-quiz", "rotate-backups", "reconcile-bank-statement", "word-frequency"]
"""Labelled tasks: three controls and three defects (reward_tamper twice, false_pass + weak_verifier)."""
KINDS_ON = {"docker": ("sigkill", "kill", "pause"), "bwrap": ("sigkill",)}


def copy_pool(names: list[str], dst: Path) -> Path:
    if dst.exists():
        shutil.rmtree(dst)
    for name in names:
        shutil.copytree(POOL / name, dst / name)
    return dst


def audit_args(pool: Path, backend: str, report: Path | None = None) -> list[str]:
    args = [QAFLOW, "audit", str(pool), "--backend", backend, "--offline", "--network", "none", "--repeats", "2"]
    return args + (["--json", str(report)] if report else [])


def run_audit(pool: Path, backend: str, report: Path) -> float:
    started = time.perf_counter()
    done = subprocess.run(audit_args(pool, backend, report), capture_output=True, text=True, check=False)
    if done.returncode != 0:
        sys.exit(f"audit of {pool} exited {done.returncode}:\n{done.stderr[-3000:]}")
    return time.perf_counter() - started


def outcomes(report: Path) -> dict[str, tuple[str, tuple[str, ...]]]:
    document = json.loads(report.read_text())
    tasks = document["tasks"] if isinstance(document, dict) else document
    return {
        Path(t["path"]).name: (
            t["verdict"],
            tuple(sorted({f["code"] for f in t["findings"] if f.get("severity", "error") == "error"})),
        )
        for t in tasks
    }


def containers() -> list[str]:
    from qaflow.sandbox.docker.backend import RUN_LABEL

    done = subprocess.run(
        ["docker", "ps", "-q", "--filter", f"label={RUN_LABEL}", "--filter", "status=running"],
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout.split()


def inject(kind: str, proc: subprocess.Popen[bytes], rng: random.Random) -> str:
    """Apply one fault; returns what was done (or why nothing was)."""
    if kind == "sigkill":
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        return "sigkill"
    boxes = containers()
    if not boxes:
        return f"{kind}: no container running"
    box = rng.choice(boxes)
    verb = "kill" if kind == "kill" else "pause"
    done = subprocess.run(["docker", verb, box], capture_output=True, text=True, check=False)
    return f"{verb} {box[:12]}" + ("" if done.returncode == 0 else f" (failed: {done.stderr.strip()[:80]})")


def faulted_round(pool: Path, backend: str, faults: int, span: float, rng: random.Random) -> list[str]:
    """Audit `pool` with `faults` faults at random moments within `span` seconds; the audit restarts after a
    SIGKILL and runs to its end after the last fault."""
    moments = sorted(rng.uniform(1.0, span) for _ in range(faults))
    kinds = KINDS_ON[backend]
    done: list[str] = []
    started = time.monotonic()

    def start() -> subprocess.Popen[bytes]:
        return subprocess.Popen(
            audit_args(pool, backend), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
        )

    proc = start()
    for moment in moments:
        while time.monotonic() - started < moment:
            if proc.poll() is not None:
                proc = start()  # it finished before the fault: the fault lands on a rerun, as faults do
            time.sleep(0.2)
        done.append(inject(rng.choice(kinds), proc, rng))
        if proc.poll() is not None:
            proc = start()
    proc.wait()
    return done


def ledger_problems(pool: Path) -> list[str]:
    from qaflow.audit.probe_run import ProbeRun
    from qaflow.audit.recorded import failed_sandbox
    from qaflow.ledger import Ledger
    from qaflow.models.probe_key import ProbeKey, ProbeKind

    path = pool / ".qaflow" / "ledger.sqlite"
    conn = sqlite3.connect(path)
    try:
        integrity = conn.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        conn.close()
    problems = [] if integrity == "ok" else [f"integrity_check: {integrity}"]
    with Ledger(path) as ledger:
        runs = {r.run_id: r for r in ledger.runs()}
        problems += [f"run {r.run_id} left open" for r in runs.values() if r.ended_at is None]
        for result in ledger.results():
            where = f"{result.task_version[:12]} {result.probe}#{result.attempt}"
            if result.run_id not in runs:
                problems.append(f"{where}: recorded under no run")
            elif result.probe == str(ProbeKey(ProbeKind.BUILD)):
                continue  # an image build: its own payload, retried by the build when it failed
            elif failed_sandbox(ProbeRun.model_validate(result.payload)):
                problems.append(f"{where}: a failed sandbox kept as a result")
    if shutil.which("docker"):
        from qaflow.sandbox.docker.backend import RUN_LABEL

        for run_id in runs:
            left = subprocess.run(["docker", "ps", "-aq", "--filter", f"label={RUN_LABEL}={run_id}"],
                                  capture_output=True, text=True, check=False).stdout.split()  # fmt: skip
            problems += [f"container {box[:12]} of run {run_id} left behind" for box in left]
    return problems


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backend", default="docker", choices=sorted(KINDS_ON))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--faults", type=int, default=4, help="faults per round")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--tasks", default=",".join(TASKS), help="comma-separated folders of tasks_repo")
    opts = parser.parse_args()
    names = [n for n in opts.tasks.split(",") if n]
    rng = random.Random(opts.seed)
    work = Path(tempfile.mkdtemp(prefix="qaflow-faults-"))
    try:
        base_pool = copy_pool(names, work / "baseline")
        seconds = run_audit(base_pool, opts.backend, work / "baseline.json")
        expected = outcomes(work / "baseline.json")
        print(f"baseline ({opts.backend}, {len(names)} tasks): {seconds:.0f} s, uninterrupted")
        for task, (verdict, codes) in sorted(expected.items()):
            print(f"  {task}: {verdict} {', '.join(codes) or '-'}")
        same = total = failed_invariants = 0
        for k in range(opts.rounds):
            pool = copy_pool(names, work / f"round-{k}")
            t0 = time.perf_counter()
            applied = faulted_round(pool, opts.backend, opts.faults, seconds * 0.9, rng)
            run_audit(pool, opts.backend, work / f"round-{k}.json")
            got = outcomes(work / f"round-{k}.json")
            differ = {t: (got.get(t), want) for t, want in expected.items() if got.get(t) != want}
            problems = ledger_problems(pool)
            same += len(expected) - len(differ)
            total += len(expected)
            failed_invariants += len(problems)
            equal = len(expected) - len(differ)
            took = time.perf_counter() - t0
            print(f"round {k}: faults [{'; '.join(applied)}], {took:.0f} s; verdicts equal {equal}/{len(expected)}; "
                  f"ledger problems {len(problems)}")  # fmt: skip
            for task, (now, want) in differ.items():
                print(f"  differs: {task}: {now} (uninterrupted: {want})")
            for problem in problems[:10]:
                print(f"  ledger: {problem}")
        print(f"verdicts equal after a plain rerun: {same}/{total}; ledger problems: {failed_invariants}")
        sys.exit(0 if same == total and failed_invariants == 0 else 1)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
