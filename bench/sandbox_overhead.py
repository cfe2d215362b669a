"""A trial's cost against the bare minimum, measured in the same run (machines here are noisy).

docker: `run_trial(oracle)` on a bundled task vs `docker run --rm IMAGE sh -c '<solve; verify>'`
with the plain CLI and the same files bind-mounted. bwrap: the same trial vs the bare `bwrap`
command line running the same script. Prints medians and the ratios; targets are docker <= 1.3x,
bwrap <= 1.5x and under 50 ms. Also checks that a second trial of the same task builds nothing.
gVisor: the same trial under `docker --runtime runsc` against the default runtime, measured
alternately in the same run (reported, no target: gVisor trades speed for a user-space kernel);
skipped, with the reason, where runsc does not start containers.
Services: on docker, a trial whose solution leaves a server running (the verifier then runs in a
view: a snapshot of the container in its network namespace) against the same task leaving
nothing running, sampled alternately; target <= 2x.

Usage: python bench/sandbox_overhead.py [--task tasks_repo/csv-sum] [--repeats 15]
       [--backend docker|bwrap|gvisor|both]   (both: every backend that works here)
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from qaflow.agents import OracleAgent
from qaflow.sandbox import check_backend, check_runtime
from qaflow.sandbox.spec import spec_for_task
from qaflow.task import Task
from qaflow.trial import run_trial

SCRIPT = (
    "cd {workdir} && bash /solution/solve.sh && rm -rf /logs/verifier && mkdir -p /logs/verifier"
    " && bash /tests/test.sh && cat /logs/verifier/reward.txt"
)


def median_seconds(fn: Callable[[], object], repeats: int) -> float:
    samples = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def check(cmd: list[str]) -> None:
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0 or proc.stdout.strip().splitlines()[-1:] != ["1"]:
        sys.exit(f"baseline failed ({proc.returncode}): {proc.stdout[-300:]} {proc.stderr[-300:]}")


def oracle_trial(task: Task, backend: str) -> None:
    result = run_trial(task, OracleAgent(), backend=backend)
    if result.reward != 1.0:
        sys.exit(f"trial failed: {result.error or result.verifier_exec}")


def bench_docker(task: Task, repeats: int) -> tuple[float, float]:
    from qaflow.sandbox.docker.backend import DockerBackend

    spec = spec_for_task(task, run_id="bench")
    first = time.perf_counter()
    image = DockerBackend().build(spec)
    build_s = time.perf_counter() - first
    second = time.perf_counter()
    DockerBackend().build(spec)
    rebuild_s = time.perf_counter() - second
    print(f"docker build: first {build_s:.2f} s, second {rebuild_s * 1000:.1f} ms (cached: builds nothing)")
    network = "bridge" if spec.runtime_network else "none"  # the network the trial gets (README "Network")
    cmd = [
        "docker", "run", "--rm", "--network", network,
        "-v", f"{task.solution_dir}:/solution:ro", "-v", f"{task.tests_dir}:/tests:ro",
        image, "sh", "-c", SCRIPT.format(workdir="/app"),
    ]  # fmt: skip
    check(cmd)
    oracle_trial(task, "docker")
    bare = median_seconds(lambda: subprocess.run(cmd, capture_output=True, check=True), repeats)
    trial = median_seconds(lambda: oracle_trial(task, "docker"), repeats)
    return bare, trial


def bench_gvisor(task: Task, repeats: int) -> tuple[float, float]:
    """Median trial seconds on the default runtime and under runsc, sampled alternately (same noise)."""
    oracle_trial(task, "docker")
    oracle_trial(task, "docker:runsc")
    plain: list[float] = []
    gvisor: list[float] = []
    for _ in range(repeats):
        for backend, samples in (("docker", plain), ("docker:runsc", gvisor)):
            t0 = time.perf_counter()
            oracle_trial(task, backend)
            samples.append(time.perf_counter() - t0)
    return statistics.median(plain), statistics.median(gvisor)


def bwrap_command(task: Task, script: str) -> list[str]:
    """The bare bwrap command line running `script` over a fresh copy of the task's environment."""
    work = Path(tempfile.mkdtemp(prefix="qaflow-bench-"))
    for name in ("app", "logs"):
        (work / name).mkdir()
    subprocess.run(["cp", "-a", f"{task.environment_dir}/.", str(work / "app")], check=True)
    pyroot = Path(sys.base_prefix)
    return [
        "bwrap", "--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin", "--symlink", "usr/lib", "/lib",
        "--symlink", "usr/lib64", "/lib64", "--ro-bind", "/etc", "/etc", "--ro-bind", str(pyroot), str(pyroot),
        "--dir", "/tmp", "--bind", str(work / "app"), "/app", "--bind", str(work / "logs"), "/logs",
        "--ro-bind", str(task.solution_dir), "/solution", "--ro-bind", str(task.tests_dir), "/tests",
        "--proc", "/proc", "--dev", "/dev", "--unshare-all", "--die-with-parent", "--new-session",
        "--setenv", "PATH", f"{pyroot}/bin:/usr/local/bin:/usr/bin:/bin", "--chdir", "/app",
        "sh", "-c", script,
    ]  # fmt: skip


def bench_bwrap(task: Task, repeats: int) -> tuple[float, float]:
    cmd = bwrap_command(task, SCRIPT.format(workdir="/app"))
    check(cmd)
    oracle_trial(task, "bwrap")
    bare = median_seconds(lambda: subprocess.run(cmd, capture_output=True, check=True), repeats)
    trial = median_seconds(lambda: oracle_trial(task, "bwrap"), repeats)
    return bare, trial


def trivial_task(leave_running: str = "") -> Task:
    """A task whose solution and verifier are one shell line each: the trial's own cost, absolute.
    `leave_running`: a shell command the solution starts in the background and leaves running."""
    root = Path(tempfile.mkdtemp(prefix="qaflow-bench-task-"))
    background = f"nohup {leave_running} >/dev/null 2>&1 &\n" if leave_running else ""
    for sub, name, text in (
        ("environment", "Dockerfile", "FROM python:3.11-slim\nWORKDIR /app\n"),
        ("tests", "test.sh", '#!/bin/sh\n[ "$(cat /app/out)" = ok ] && echo 1 > /logs/verifier/reward.txt\n'),
        ("solution", "solve.sh", f"#!/bin/sh\necho ok > /app/out\n{background}"),
    ):
        (root / sub).mkdir(exist_ok=True)
        (root / sub / name).write_text(text)
    (root / "instruction.md").write_text("Write ok to /app/out.\n")
    (root / "task.toml").write_text('[task]\nname = "bench/trivial"\n[verifier]\ntimeout_sec = 10\n')
    return Task.load(root)


def bench_services(repeats: int) -> tuple[float, float]:
    """Median docker trial seconds of a task leaving nothing running and of one leaving a server
    running (the verifier runs in a view), sampled alternately (same noise)."""
    plain_task = trivial_task()
    service_task = trivial_task("python3 -m http.server 8080 --bind 127.0.0.1")
    oracle_trial(plain_task, "docker")
    oracle_trial(service_task, "docker")
    plain: list[float] = []
    service: list[float] = []
    for _ in range(repeats):
        for task, samples in ((plain_task, plain), (service_task, service)):
            t0 = time.perf_counter()
            oracle_trial(task, "docker")
            samples.append(time.perf_counter() - t0)
    return statistics.median(plain), statistics.median(service)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--task", default=str(Path(__file__).resolve().parent.parent / "tasks_repo" / "csv-sum"))
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--backend", choices=["docker", "bwrap", "gvisor", "both"], default="both")
    args = parser.parse_args()
    task = Task.load(args.task)
    targets = {"docker": 1.3, "bwrap": 1.5}
    failed = False
    for name, bench in (("docker", bench_docker), ("bwrap", bench_bwrap)):
        if args.backend not in (name, "both"):
            continue
        ok, reason = check_backend(name)
        if not ok:
            print(f"{name}: unavailable ({reason})")
            continue
        bare, trial = bench(task, args.repeats)
        ratio = trial / bare
        verdict = "ok" if ratio <= targets[name] else "OVER TARGET"
        failed |= ratio > targets[name]
        print(
            f"{name}: bare {bare * 1000:.1f} ms, trial {trial * 1000:.1f} ms, "
            f"ratio {ratio:.2f}x (target <= {targets[name]}x) {verdict}"
        )
        if name == "docker":
            plain, service = bench_services(args.repeats)
            verdict = "ok" if service / plain <= 2.0 else "OVER TARGET"
            failed |= service / plain > 2.0
            print(
                f"docker services: trial leaving nothing running {plain * 1000:.1f} ms, leaving a server running "
                f"(verifier in a view) {service * 1000:.1f} ms, ratio {service / plain:.2f}x (target <= 2x) {verdict}"
            )
        if name == "bwrap":
            trivial = trivial_task()
            oracle_trial(trivial, "bwrap")
            seconds = median_seconds(partial(oracle_trial, trivial, "bwrap"), args.repeats)
            verdict = "ok" if seconds < 0.05 else "OVER TARGET"
            failed |= seconds >= 0.05
            print(f"bwrap: a whole trial of a shell-only task takes {seconds * 1000:.1f} ms (target < 50 ms) {verdict}")
    if args.backend in ("gvisor", "both"):
        ok, reason = check_runtime("runsc")
        if not ok:
            print(f"gvisor: unavailable ({reason})")
        else:
            plain, gvisor = bench_gvisor(task, args.repeats)
            print(
                f"gvisor: docker trial {plain * 1000:.1f} ms, docker --runtime runsc trial {gvisor * 1000:.1f} ms, "
                f"ratio {gvisor / plain:.2f}x (reported, no target)"
            )
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
