"""Evidence-driven audit vs the quick check and the fixed plan, same pool, same run, warm images.

Three commands on fresh copies of the pool (fresh ledgers, nothing cached), each timed from outside as
a user runs them: `qaflow check` (one oracle and one nop trial per task), `qaflow audit` (the default,
evidence-driven plan) and `qaflow audit --exhaustive` (N trials each of nop and oracle). A warm-up
audit builds every image first. Prints audit/check (target <= 2x), exhaustive/default, the trials
each audit recorded, and every task whose verdict or error codes differ between the two plans
(target: none).

Also prints where the default audit's trial time went, by probe and phase (setup, agent, verifier,
the verifier's reruns).

Usage: python bench/audit_evidence.py [--pool tasks_repo] [--backend auto|docker|bwrap] [--jobs 2] [--no-exhaustive]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
QAFLOW = str(Path(sys.executable).parent / "qaflow")
OFFLINE = ["--offline", "--network", "none"]


def copy_pool(src: Path, root: Path, name: str) -> Path:
    dst = root / name
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns(".qaflow"))
    return dst


def timed(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - t0
    if done.returncode != 0:
        sys.exit(f"{' '.join(cmd)} exited {done.returncode}:\n{done.stderr[-2000:]}")
    return elapsed


def trials(pool: Path) -> int:
    with sqlite3.connect(pool / ".qaflow" / "ledger.sqlite") as db:
        return db.execute("SELECT count(*) FROM results WHERE probe != 'build'").fetchone()[0]


def phase_seconds(pool: Path) -> dict[str, dict[str, float]]:
    """Trial seconds by probe family (nop, oracle, observe, mutant, exploit, ...) and by phase (setup, agent,
    verifier, reruns), from the timings each recorded probe run keeps."""
    by: dict[str, dict[str, float]] = {}
    with sqlite3.connect(pool / ".qaflow" / "ledger.sqlite") as db:
        rows = db.execute("SELECT probe, payload_json, duration_s FROM results WHERE probe != 'build'").fetchall()
    for probe, payload, total in rows:
        timings = json.loads(payload).get("timings") or {}
        family = by.setdefault(probe.split(":")[0], {})
        for phase in ("setup", "agent", "verifier", "reruns"):
            family[phase] = family.get(phase, 0.0) + timings.get(phase, 0.0)
        family["total"] = family.get("total", 0.0) + total
        family["runs"] = family.get("runs", 0) + 1
    return by


def verdicts(report: Path) -> dict[str, tuple[str, list[str]]]:
    out = {}
    for audit in json.loads(report.read_text())["tasks"]:
        codes = sorted({f["code"] for f in audit["findings"] if f["severity"] == "error"})
        out[Path(audit["path"]).name] = (audit["verdict"], codes)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pool", default=str(REPO / "tasks_repo"))
    parser.add_argument("--backend", choices=["auto", "docker", "bwrap"], default="auto")
    parser.add_argument("--jobs", default="2")
    parser.add_argument("--no-exhaustive", action="store_true", help="skip the fixed plan's audit")
    args = parser.parse_args()
    common = ["--backend", args.backend, "--jobs", args.jobs, *OFFLINE]
    with tempfile.TemporaryDirectory(prefix="qaflow-bench-") as tmp:
        root = Path(tmp)
        warm = copy_pool(Path(args.pool), root, "warm")
        timed([QAFLOW, "audit", str(warm), *common, "--repeats", "1", "--max-mutants", "0"])
        check_s = timed([QAFLOW, "check", str(copy_pool(Path(args.pool), root, "check")), *common, "--json"])
        runs: dict[str, tuple[float, int, dict[str, tuple[str, list[str]]]]] = {}
        plans = (("default", []),) if args.no_exhaustive else (("default", []), ("exhaustive", ["--exhaustive"]))
        for plan, extra in plans:
            pool = copy_pool(Path(args.pool), root, plan)
            report = root / f"{plan}.json"
            seconds = timed([QAFLOW, "audit", str(pool), *common, *extra, "--json", str(report)])
            runs[plan] = (seconds, trials(pool), verdicts(report))
            if plan == "default":
                phases = phase_seconds(pool)
    (default_s, default_n, default_v) = runs["default"]
    print(f"{args.backend}: {len(default_v)} tasks, jobs {args.jobs}: check {check_s:.1f} s")
    print(f"audit {default_s:.1f} s ({default_n} trials)")
    print_phases(phases)
    print(f"audit / check: {default_s / check_s:.2f}x (target <= 2x)")
    if "exhaustive" not in runs:
        return
    (exhaustive_s, exhaustive_n, exhaustive_v) = runs["exhaustive"]
    differ = {t: (default_v.get(t), exhaustive_v.get(t)) for t in default_v.keys() | exhaustive_v.keys()}
    differ = {t: pair for t, pair in differ.items() if pair[0] != pair[1]}
    print(f"audit --exhaustive {exhaustive_s:.1f} s ({exhaustive_n} trials)")
    print(f"exhaustive / default: {exhaustive_s / default_s:.2f}x; trials {exhaustive_n / default_n:.2f}x")
    print(f"verdicts that differ between the plans: {len(differ)} (target 0)")
    for task, (a, b) in sorted(differ.items()):
        print(f"  {task}: default {a}, exhaustive {b}")


def print_phases(phases: dict[str, dict[str, float]]) -> None:
    """Where the default audit's trial time went: the verifier's runs (first runs and reruns) against the rest."""
    total = sum(f["total"] for f in phases.values())
    verifier = sum(f["verifier"] + f["reruns"] for f in phases.values())
    print(f"default audit trial time {total:.1f} s; the verifier's runs {verifier:.1f} s ({verifier / total:.0%}):")
    for name, f in sorted(phases.items(), key=lambda kv: -kv[1]["total"]):
        runs, spent = int(f["runs"]), " ".join(f"{p} {f[p]:6.1f}" for p in ("setup", "agent", "verifier", "reruns"))
        print(f"  {name:10} {runs:4} runs {f['total']:7.1f} s: {spent}")


if __name__ == "__main__":
    main()
