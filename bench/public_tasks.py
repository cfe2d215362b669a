"""Audit public Terminal-Bench adapter tasks (written by others) offline, for judging findings by hand.

Takes a git checkout of a Terminal-Bench adapter dataset collection (`datasets/evoeval/<n>/`,
`datasets/aider_polyglot/polyglot_python_<name>/`, e.g. github.com/rese1f/terminal-bench-datasets), copies
the first `--evoeval` and `--aider` tasks out of git (tests and solutions byte-identical), makes them run
without a registry or internet, converts them with `qaflow import tb`, audits them and prints every error
finding with its exploit or mutant, then the verdict counts. What is changed to run offline, and nothing
else:

- evoeval: `FROM ghcr.io/laude-institute/t-bench/python-3-13` runs on the offline base (an alias table in
  `QAFLOW_IMAGE_ALIASES`: Python 3.11, so a task whose oracle needs 3.12+ is `infra_error`); `run-tests.sh`
  (which installs uv from the internet) becomes `python3 -m pytest $TEST_DIR/test_outputs.py -rA`;
- aider polyglot (Python): the Dockerfile (buildpack-deps:jammy and a PPA) becomes the offline base plus
  Debian's openssl (from the package mirror over HTTP, as the build's network allows), `WORKDIR /app`,
  `COPY workspace/ ./`, the same ENV; the `pip3 install pytest` line of `run-tests.sh` becomes `true`;
- aider polyglot (C++, `--cpp N`): audited on bwrap with the host's g++, cmake, make and openssl (the
  Dockerfile's buildpack-deps:jammy and apt lines become `FROM python:3.11-slim`, which bwrap runs on the host's
  root), plus `TAR_OPTIONS=--no-same-owner` (bwrap maps root alone: the solution's tar could not keep the
  payload's owner).

Judging is by hand: reproduce a finding with the command it prints (`qaflow run TASK --agent ...`).

Usage: python bench/public_tasks.py CHECKOUT [--evoeval 20] [--aider 10] [--cpp 0] [--backend docker] [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

QAFLOW = str(Path(sys.executable).parent / "qaflow")
EVOEVAL_TESTS = "#!/bin/bash\ncd /app\npython3 -m pytest $TEST_DIR/test_outputs.py -rA\n"
AIDER_DOCKERFILE = (
    "FROM qaflow/base:bookworm\nRUN apt-get update && apt-get install -y openssl && rm -rf /var/lib/apt/lists/*\n"
    "WORKDIR /app\nCOPY workspace/ ./\nRUN mkdir -p /tests\nENV TEST_DIR=/tests\nENV LANG=C.UTF-8\nENV LC_ALL=C.UTF-8\n"
)
CPP_DOCKERFILE = (
    "FROM python:3.11-slim\nWORKDIR /app\nCOPY workspace/ ./\nRUN mkdir -p /tests\nENV TEST_DIR=/tests\n"
    "ENV LANG=C.UTF-8\nENV LC_ALL=C.UTF-8\nENV CXX=g++\nENV CC=gcc\nENV TAR_OPTIONS=--no-same-owner\n"
)
ALIASES = '"ghcr.io/laude-institute/t-bench/python-3-13:*" = "qaflow/base:bookworm"\n'


def names(checkout: Path, folder: str) -> list[str]:
    out = subprocess.run(
        ["git", "-C", str(checkout), "ls-tree", "--name-only", f"HEAD:{folder}"], capture_output=True, text=True
    )
    return out.stdout.split()


def extract(checkout: Path, folder: str, dest: Path) -> bool:
    """Copy one task folder out of git; False when the checkout lacks some of its files."""
    dest.mkdir(parents=True)
    archive = subprocess.run(["git", "-C", str(checkout), "archive", f"HEAD:{folder}"], capture_output=True)
    unpacked = (
        archive.returncode == 0 and subprocess.run(["tar", "-x", "-C", str(dest)], input=archive.stdout).returncode == 0
    )
    return unpacked


def prepare_cpp(checkout: Path, root: Path, n_cpp: int) -> Path:
    raw = root / "tb-cpp"
    for name in [n for n in names(checkout, "datasets/aider_polyglot") if n.startswith("polyglot_cpp_")][:n_cpp]:
        task = raw / name
        if extract(checkout, f"datasets/aider_polyglot/{name}", task):
            (task / "Dockerfile").write_text(CPP_DOCKERFILE)
        else:
            subprocess.run(["rm", "-rf", str(task)], check=True)
    pool = root / "pool-cpp"
    subprocess.run([QAFLOW, "import", "tb", str(raw), str(pool)], check=True, capture_output=True)
    return pool


def run_audit(pool: Path, backend: str, jobs: str, env: dict[str, str]) -> list[dict]:  # type: ignore[type-arg]
    report = pool.parent / f"audit-{pool.name}.json"
    subprocess.run(
        [QAFLOW, "audit", str(pool), "--backend", backend, "--jobs", jobs, "--json", str(report)],
        check=True, env=env, capture_output=True,
    )  # fmt: skip
    audits: list[dict] = json.loads(report.read_text())["tasks"]  # type: ignore[type-arg]
    return audits


def prepare(checkout: Path, root: Path, n_evoeval: int, n_aider: int) -> Path:
    raw = root / "tb"
    evo = sorted(names(checkout, "datasets/evoeval"), key=lambda n: (len(n), n))
    taken = 0
    for name in evo:
        if taken == n_evoeval:
            break
        task = raw / f"evoeval-{name}"
        if extract(checkout, f"datasets/evoeval/{name}", task):
            (task / "run-tests.sh").write_text(EVOEVAL_TESTS)
            taken += 1
        else:
            subprocess.run(["rm", "-rf", str(task)], check=True)
    aider = [n for n in names(checkout, "datasets/aider_polyglot") if n.startswith("polyglot_python_")]
    for name in aider[:n_aider]:
        task = raw / name
        if not extract(checkout, f"datasets/aider_polyglot/{name}", task):
            subprocess.run(["rm", "-rf", str(task)], check=True)
            continue
        (task / "Dockerfile").write_text(AIDER_DOCKERFILE)
        tests = (task / "run-tests.sh").read_text()
        lines = ["true" if line.startswith("pip3 install") else line for line in tests.splitlines()]
        (task / "run-tests.sh").write_text("\n".join(lines) + "\n")
    pool = root / "pool"
    subprocess.run([QAFLOW, "import", "tb", str(raw), str(pool)], check=True, capture_output=True)
    return pool


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkout", type=Path)
    parser.add_argument("--evoeval", type=int, default=20)
    parser.add_argument("--aider", type=int, default=10)
    parser.add_argument("--cpp", type=int, default=0, help="aider C++ tasks, audited on bwrap")
    parser.add_argument("--backend", default="docker")
    parser.add_argument("--jobs", default="2")
    parser.add_argument("--out", type=Path, default=None, help="keep the pool and report here")
    args = parser.parse_args()
    root = args.out or Path(tempfile.mkdtemp(prefix="qaflow-public-"))
    pool = prepare(args.checkout.resolve(), root, args.evoeval, args.aider)
    aliases = root / "aliases.toml"
    aliases.write_text(ALIASES)
    started = time.perf_counter()
    env = {**os.environ, "QAFLOW_IMAGE_ALIASES": str(aliases)}
    audits = run_audit(pool, args.backend, args.jobs, env)
    if args.cpp:
        audits += run_audit(prepare_cpp(args.checkout.resolve(), root, args.cpp), "bwrap", args.jobs, env)
    seconds = time.perf_counter() - started
    for audit in audits:
        for finding in (f for f in audit["findings"] if f["severity"] == "error"):
            evidence = finding.get("evidence") or {}
            how = [e.get("reproduce") for e in evidence.get("exploits") or []]
            how += [m.get("reproduce") for m in evidence.get("code_mutants") or []]
            print(f"{audit['task']}: {finding['code']}: {finding['message'][:240]}")
            for line in filter(None, how[:2]):
                print(f"    {line.split(';')[0]}")  # the command; the plant's script follows in the report
    verdicts = Counter(a["verdict"] for a in audits)
    codes = Counter(f["code"] for a in audits for f in a["findings"] if f["severity"] == "error")
    where = args.backend + (" (C++ on bwrap)" if args.cpp else "")
    print(f"{len(audits)} public tasks audited on {where} in {seconds:.0f} s: {dict(verdicts)}")
    print(f"error findings by code: {dict(codes)} (judge each by reproducing it); pool and report: {root}")


if __name__ == "__main__":
    main()
