"""Audit throughput: seconds per probe trial against a bare `docker run` of the same scripts, same run.

The audit of the pool runs with a fresh ledger (nothing cached, images already built by a warm-up
pass), one trial at a time so the two sides are comparable. The baseline runs, for every probe
trial the audit made, the same scripts with the plain CLI: `docker run --rm` with solution/ and
tests/ bind-mounted and the network the task gets (README "Network"), `sh -c 'solve.sh (oracle
only); test.sh; cat reward'`. bwrap gets the same
treatment against the bare `bwrap` command line. Target: docker <= 1.3x.

`--code-mutants` times the audit with and without code mutants of the reference solution's Python
(`AuditConfig.code_mutants`), battery on both times, same tasks, fresh ledgers, warm images. Target: <= 1.3x.

`--battery` instead times the audit of the pool with and without the trust-boundary observation and
the exploit battery (`AuditConfig.observe`; off is the audit as it was before them), same tasks,
fresh ledgers, warm images. Target: <= 1.3x.

Usage: python bench/audit_throughput.py [--pool tasks_repo] [--backend docker|bwrap|both] [--limit 8]
       python bench/audit_throughput.py --battery|--code-mutants [--limit 100] [--repeats 6] [--jobs 2]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from qaflow.audit.runner import AuditConfig, Auditor
from qaflow.ledger import Ledger
from qaflow.models.records import RunKind, TaskVersion, VersionStatus, utcnow
from qaflow.sandbox import check_backend
from qaflow.sandbox.spec import spec_for_task
from qaflow.task import Task, find_task_dirs

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))
from sandbox_overhead import bwrap_command  # noqa: E402


def sound_tasks(pool: Path, limit: int) -> list[Task]:
    tasks = []
    for folder in find_task_dirs(pool):
        try:
            tasks.append(Task.load(folder))
        except Exception:  # invalid tasks are not part of the figure
            continue
    return tasks[:limit]


def audit_seconds(
    tasks: list[Task], backend: str, repeats: int, *, observe: bool = True, jobs: int = 1, code_mutants: bool = True
) -> tuple[float, int]:
    with tempfile.TemporaryDirectory() as tmp:
        ledger = Ledger(Path(tmp) / "ledger.sqlite")
        for t in tasks:
            ledger.add_version(
                TaskVersion(
                    version=t.version,
                    name=t.name,
                    source="bench",
                    path=str(t.path),
                    status=VersionStatus.NEW,
                    created_at=utcnow(),
                )
            )
        run = ledger.start_run(RunKind.AUDIT, {})
        config = AuditConfig(backend=backend, repeats=repeats, jobs=jobs, observe=observe, code_mutants=code_mutants)
        auditor = Auditor(ledger, run.run_id, config)
        t0 = time.perf_counter()
        auditor.audit([t.path for t in tasks])
        elapsed = time.perf_counter() - t0
        auditor.close()
        trials = sum(1 for r in ledger.results() if r.probe != "build")
        ledger.close()
    return elapsed, trials


def bare_seconds(tasks: list[Task], backend: str, trials_per_task: float) -> float:
    """Bare runs: per task, one oracle-like and one nop-like script, scaled to the audit's trial count."""
    total = 0.0
    for task in tasks:
        for with_solution in (True, False):
            # The agent timeout, as the trial has it (a solution that never ends must not hang the baseline).
            solve = f"timeout {task.agent_timeout_sec:g} bash /solution/solve.sh; "
            script = (solve if with_solution else "") + (
                "mkdir -p /logs/verifier; bash /tests/test.sh; cat /logs/verifier/reward.* 2>/dev/null; true"
            )
            cmd = _bare_cmd(task, backend, script)
            t0 = time.perf_counter()
            subprocess.run(cmd, capture_output=True, check=False)
            total += (time.perf_counter() - t0) * trials_per_task / 2
    return total


def _bare_cmd(task: Task, backend: str, script: str) -> list[str]:
    if backend == "docker":
        from qaflow.sandbox.docker.backend import DockerBackend

        spec = spec_for_task(task)
        image = DockerBackend().build(spec)
        network = "bridge" if spec.runtime_network else "none"  # the network the audit's trials get
        return [
            "docker", "run", "--rm", "--network", network,
            "-v", f"{task.solution_dir}:/solution:ro", "-v", f"{task.tests_dir}:/tests:ro",
            image, "sh", "-c", f"cd /app 2>/dev/null; {script}",
        ]  # fmt: skip
    return bwrap_command(task, script)


def feature_ratio(tasks: list[Task], backend: str, repeats: int, jobs: int, feature: str) -> float:
    """Seconds to audit `tasks` without, then with, one `AuditConfig` feature (`observe`: the observation and
    exploit battery; `code_mutants`, the battery on both times); prints the ratio."""
    what = {"observe": "the battery", "code_mutants": "code mutants"}[feature]
    audit_seconds(tasks, backend, 1, jobs=jobs, **{feature: False})  # warm-up: builds every image
    before, n_before = audit_seconds(tasks, backend, repeats, jobs=jobs, **{feature: False})
    after, n_after = audit_seconds(tasks, backend, repeats, jobs=jobs, **{feature: True})
    ratio = after / before
    print(
        f"{backend}: {len(tasks)} tasks, {repeats} repeats, {jobs} jobs: audit without {what} {before:.1f} s "
        f"({n_before} trials), with it {after:.1f} s ({n_after} trials): ratio {ratio:.2f}x (target <= 1.3x)"
    )
    return ratio


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pool", default=str(REPO / "tasks_repo"))
    parser.add_argument("--backend", choices=["docker", "bwrap", "both"], default="both")
    parser.add_argument("--limit", type=int, default=8, help="tasks to audit (loadable ones, in folder order)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=1, help="trials at once (--battery)")
    parser.add_argument("--battery", action="store_true", help="time the audit with vs without the exploit battery")
    parser.add_argument("--code-mutants", action="store_true", help="time the audit with vs without code mutants")
    args = parser.parse_args()
    tasks = sound_tasks(Path(args.pool), args.limit)
    for backend in ("docker", "bwrap"):
        if args.backend not in (backend, "both"):
            continue
        ok, reason = check_backend(backend)
        if not ok:
            print(f"{backend}: unavailable ({reason})")
            continue
        if args.battery:
            feature_ratio(tasks, backend, args.repeats, args.jobs, "observe")
            continue
        if args.code_mutants:
            feature_ratio(tasks, backend, args.repeats, args.jobs, "code_mutants")
            continue
        audit_seconds(tasks[:1], backend, 1)  # warm-up: builds images
        for t in tasks:
            try:
                _bare_cmd(t, backend, "true")
            except Exception:  # an unbuildable task is timed by the audit alone
                continue
        elapsed, trials = audit_seconds(tasks, backend, args.repeats)
        bare = bare_seconds(tasks, backend, trials / len(tasks))
        per_probe, per_bare = elapsed / trials, bare / trials
        print(
            f"{backend}: {len(tasks)} tasks, {trials} probe trials in {elapsed:.1f} s: "
            f"{per_probe * 1000:.0f} ms per probe vs bare {per_bare * 1000:.0f} ms: ratio {per_probe / per_bare:.2f}x"
            + (" (target <= 1.3x)" if backend == "docker" else "")
        )


if __name__ == "__main__":
    main()
