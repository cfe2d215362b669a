"""`qaflow audit` of a pool with this checkout's code against an earlier revision's, same run, warm images.

The earlier revision is checked out into a temporary git worktree and run with the same virtualenv
(`PYTHONPATH` puts its `qaflow` first). Each side audits fresh copies of a pool (fresh ledgers,
nothing cached) after a warm-up audit built every image it needs; the sides alternate `--rounds`
times so drift in the machine's load hits both. Two comparisons:

- `own pools`: each revision on its own `tasks_repo` (what a user of each sees from the README's
  main command; the current pool has the tasks added since);
- `same tasks`: both revisions on the earlier revision's pool.

Prints seconds per run, the median ratio current/earlier for each comparison (issue 29's target for
the revision before it: <= 1.2x), and the verdicts that differ on the shared tasks.

Usage: python bench/audit_versions.py --base efe0ce8^ [--backend docker|bwrap] [--jobs 2] [--rounds 1]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
QAFLOW = str(Path(sys.executable).parent / "qaflow")
OFFLINE = ["--offline", "--network", "none"]


def copy_pool(src: Path, dst: Path) -> Path:
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns(".qaflow"))
    return dst


def audit(code: Path | None, pool: Path, args: list[str], report: Path | None = None) -> float:
    env = dict(os.environ)
    if code is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(code), env.get("PYTHONPATH")]))
    cmd = [QAFLOW, "audit", str(pool), *args, *(["--json", str(report)] if report else [])]
    started = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, check=False, env=env, cwd=code or REPO)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"{' '.join(cmd)} (code {code or REPO}) exited {done.returncode}:\n{done.stderr[-2000:]}")
    return seconds


def verdicts(report: Path) -> dict[str, str]:
    return {Path(a["path"]).name: a["verdict"] for a in json.loads(report.read_text())["tasks"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="the earlier revision (any git revision)")
    parser.add_argument("--backend", choices=["docker", "bwrap"], default="docker")
    parser.add_argument("--jobs", default="2")
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    common = ["--backend", args.backend, "--jobs", args.jobs, *OFFLINE]
    with tempfile.TemporaryDirectory(prefix="qaflow-versions-") as tmp:
        root = Path(tmp)
        base = root / "base"
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(base), args.base], check=True)
        try:
            pools = {"current": REPO / "tasks_repo", "base": base / "tasks_repo"}
            sides = {  # (name, code, pool)
                "own/current": (None, pools["current"]),
                "own/base": (base, pools["base"]),
                "same/current": (None, pools["base"]),
            }
            for name, (code, pool) in sides.items():
                warm = copy_pool(pool, root / "warm")
                print(f"warm-up {name}: {audit(code, warm, [*common, '--repeats', '1', '--max-mutants', '0']):.0f} s")
            seconds: dict[str, list[float]] = {name: [] for name in sides}
            reports: dict[str, dict[str, str]] = {}
            for r in range(args.rounds):
                for name, (code, pool) in sides.items():
                    report = root / f"{name.replace('/', '-')}-{r}.json"
                    seconds[name].append(audit(code, copy_pool(pool, root / "run"), common, report))
                    reports[name] = verdicts(report)
                    print(f"round {r + 1} {name}: {seconds[name][-1]:.1f} s ({len(reports[name])} tasks)", flush=True)
        finally:
            subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(base)], check=False)
    med = {name: statistics.median(values) for name, values in seconds.items()}
    rev = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", args.base], capture_output=True, text=True)
    print(f"{args.backend}, jobs {args.jobs}, {args.rounds} round(s); base {args.base} = {rev.stdout.strip()}")
    print(
        f"own pools: current {med['own/current']:.1f} s ({len(reports['own/current'])} tasks), "
        f"base {med['own/base']:.1f} s ({len(reports['own/base'])} tasks): "
        f"{med['own/current'] / med['own/base']:.2f}x"
    )
    print(
        f"same tasks ({len(reports['own/base'])}): "
        f"current {med['same/current']:.1f} s vs base {med['own/base']:.1f} s: "
        f"{med['same/current'] / med['own/base']:.2f}x (issue 29 target <= 1.2x)"
    )
    differ = {t: (v, reports["same/current"].get(t)) for t, v in reports["own/base"].items()}
    differ = {t: pair for t, pair in differ.items() if pair[0] != pair[1]}
    print(f"verdicts that differ on the same tasks: {len(differ)}")
    for task, (old, new) in sorted(differ.items()):
        print(f"  {task}: base {old}, current {new}")


if __name__ == "__main__":
    main()
