"""Executors: the local pool and Ray give the same audits and rollouts; Ray retries a killed worker's
item once; the local pool never runs more than `jobs` items; cancelling stops pending items and
reaps the run's containers. One local Ray session (2 CPUs) serves the whole module."""

from __future__ import annotations

import json
import os
import re
import shutil
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import ray

from qaflow.audit.runner import AuditConfig, Auditor
from qaflow.audit.work_items import trial_item
from qaflow.errors import TaskError
from qaflow.executors import (
    Executor,
    ExecutorError,
    Handle,
    ItemCancelledError,
    LocalExecutor,
    RayExecutor,
    Resources,
    TaskRef,
    WorkerLostError,
    executor_from_options,
    resolve_task,
)
from qaflow.llm import LLMConfig, ScriptedReply
from qaflow.llm.config import ScriptedToolCall as Call
from qaflow.models.records import ResultKey, RunKind
from qaflow.models.rollout import Effort
from qaflow.pool import Pool
from qaflow.rollouts.job import RolloutJobConfig, run_rollouts
from qaflow.sandbox import open_sandbox
from qaflow.sandbox.spec import spec_for_task
from qaflow.task import Task
from tests.conftest import REPO, TASKS_REPO, require_backend
from tests.taskfactory import write_task

BWRAP_TASKS = ["csv-sum", "json-merge", "clean-phone-numbers", "dedupe-mailing-list", "render-invoices"]
DOCKER_TASKS = ["csv-sum", "clean-phone-numbers"]
CONFIG = {"repeats": 2, "max_mutants": 3, "jobs": 2}


@pytest.fixture(scope="module")
def ray_session(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A local Ray cluster with 2 CPUs; workers import this repo (tests included) and unpack shipped
    task folders under a temporary cache."""
    cache = tmp_path_factory.mktemp("task-cache")
    paths = [str(REPO), str(Path(__file__).parent), os.environ.get("PYTHONPATH")]  # this module, however imported
    env = {"PYTHONPATH": os.pathsep.join(p for p in paths if p)}
    env["QAFLOW_TASK_CACHE"] = str(cache)
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        runtime_env={"env_vars": env},
    )
    try:
        yield cache
    finally:
        ray.shutdown()


# -- work items used below (top level, so Ray pickles them by reference) ----------------------


def _die_once(marker: str) -> str:
    """Kills its worker process the first time (as an OOM kill or a lost node would), then succeeds."""
    with open(marker, "a") as fh:
        fh.write("try\n")
    if Path(marker).read_text().count("try") == 1:
        os._exit(1)
    return "ok"


def _die_always(marker: str) -> str:
    with open(marker, "a") as fh:
        fh.write("try\n")
    os._exit(1)


def _square(x: int) -> int:
    return x * x


def _sleep_in_container(task: Any, run_id: str) -> str:
    """Opens a docker sandbox labelled with `run_id` and sleeps in it."""
    with open_sandbox(spec_for_task(resolve_task(task), run_id=run_id), "docker") as box:
        box.exec("sleep 120", timeout=300)
    return "slept"


def _touch(path: str) -> str:
    Path(path).write_text("ran")
    return path


def _task_name(ref: Any) -> tuple[str, str, str]:
    task = resolve_task(ref)
    return task.name, task.version, str(task.path)


_active = 0
_peak = 0
_lock = threading.Lock()


def _count(seconds: float) -> int:
    global _active, _peak
    with _lock:
        _active += 1
        _peak = max(_peak, _active)
    time.sleep(seconds)
    with _lock:
        _active -= 1
    return _peak


# -- helpers ------------------------------------------------------------------------------


_TIMES = re.compile(r"\b\d+(?:\.\d+)?\s?(?:s|ms|sec|seconds)\b")


def _comparable(audits: list[Any], root: Path) -> list[dict[str, Any]]:
    """The audit JSON with timings (and times printed in outputs) and the pool's location left out, and which
    task proved each harness hole (the first to reach it, which concurrency decides) kept only as the proof."""
    text = json.dumps([a.model_dump(mode="json") for a in audits], sort_keys=True).replace(str(root), "POOL")
    out = json.loads(_TIMES.sub("T", text))
    for audit in out:
        audit.pop("timings")
        (audit["probes"].get("observe") or {}).get("harness", {}).pop("proofs", None)
    return out


def _audit(root: Path, backend: str, executor: Executor | None) -> tuple[list[Any], dict[tuple[str, str, int], Any]]:
    with Pool.open(root) as pool:
        pool.scan()
        run = pool.ledger.start_run(RunKind.AUDIT, {})
        auditor = Auditor(pool.ledger, run.run_id, AuditConfig(backend=backend, **CONFIG), executor=executor)
        try:
            audits = auditor.audit(sorted(p for p in root.iterdir() if (p / "task.toml").is_file()))
        finally:
            auditor.close()
        pool.ledger.end_run(run.run_id)
        # a harness hole is proven once per run, on whichever task reaches it first
        results = {
            (r.task_version, r.probe, r.attempt): (r.status, r.reward)
            for r in pool.ledger.results()
            if not r.probe.startswith("exploit:harness-")
        }
    return audits, results


def _pool(tmp_path: Path, name: str, tasks: list[str]) -> Path:
    root = tmp_path / name
    for task in tasks:
        shutil.copytree(TASKS_REPO / task, root / task)
    return root


# -- tests ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("backend", "tasks"),
    [
        pytest.param("bwrap", BWRAP_TASKS, marks=pytest.mark.bwrap),
        pytest.param("docker", DOCKER_TASKS, marks=pytest.mark.docker),
    ],
)
def test_ray_and_local_give_the_same_audit(ray_session: Path, tmp_path: Path, backend: str, tasks: list[str]):
    require_backend(backend)
    local_root, ray_root = _pool(tmp_path, "local", tasks), _pool(tmp_path, "ray", tasks)
    local, local_results = _audit(local_root, backend, None)
    with RayExecutor() as executor:
        assert executor.slots == 2
        remote, remote_results = _audit(ray_root, backend, executor)
    assert ray.is_initialized(), "an executor must leave a session it did not start running"
    assert _comparable(remote, ray_root) == _comparable(local, local_root)
    assert remote_results == local_results
    verdicts = {Path(a.path).name: (a.verdict.value, sorted({f.code.value for f in a.findings})) for a in remote}
    expected = {
        "csv-sum": ("accepted", []),
        "json-merge": ("accepted", []),
        "clean-phone-numbers": ("needs_repair", ["false_pass", "weak_verifier"]),
        "dedupe-mailing-list": ("needs_repair", ["reward_tamper"]),
        "render-invoices": ("needs_repair", ["build_failed"]),
    }
    assert verdicts == {name: expected[name] for name in tasks}
    # every probe of every buildable task was recorded by the driver: build, 2 nop, 2 oracle, tamper, mutants
    probes = {p for _, p, _ in remote_results}
    assert {"build", "nop", "oracle", "tamper"} <= probes and any(p.startswith("mutant:") for p in probes)


def test_a_killed_worker_is_retried_once(ray_session: Path, tmp_path: Path):
    once, always = tmp_path / "once", tmp_path / "always"
    with RayExecutor() as executor:
        handles = {
            "once": executor.submit(_die_once, str(once)),
            "always": executor.submit(_die_always, str(always)),
            "fine": executor.submit(_square, 7),
        }
        done = list(executor.as_completed(handles.values()))
        assert len(done) == 3
        assert handles["once"].result() == "ok"
        assert handles["fine"].result() == 49
        with pytest.raises(WorkerLostError, match=r"_die_always: the worker running it died on each of 2 tries"):
            handles["always"].result()
    assert once.read_text().count("try") == 2
    assert always.read_text().count("try") == 2, "a lost worker's item is retried exactly once"


def test_an_exception_of_the_item_is_raised_as_itself_and_not_retried(ray_session: Path, tmp_path: Path):
    """TaskError(path, reason) does not pickle by itself; it comes back as the same TaskError, once."""
    gone = tmp_path / "gone"
    with RayExecutor() as executor:
        handle = executor.submit(resolve_task, TaskRef(path=str(gone), version="0" * 64))
        with pytest.raises(TaskError) as info:
            handle.result()
    assert type(info.value) is TaskError
    assert (info.value.path, info.value.reason) == (
        gone,
        "the task folder (version 000000000000) is not on this worker",
    )
    assert str(info.value) == f"{gone}: the task folder (version 000000000000) is not on this worker"
    assert any("raised on a Ray worker" in note for note in info.value.__notes__)


def test_a_task_folder_travels_to_a_worker_that_lacks_it(ray_session: Path, tmp_path: Path):
    task = Task.load(TASKS_REPO / "csv-sum")
    ref = TaskRef.pack(task).model_copy(update={"path": str(tmp_path / "elsewhere" / "csv-sum")})
    with RayExecutor() as executor:
        name, version, path = executor.submit(_task_name, ref).result()
        shared = executor.share_task(task)
        assert executor.share_task(task) is shared, "one object-store copy per task version"
        assert executor.submit(_task_name, shared).result()[:2] == (task.name, task.version)
    assert (name, version) == (task.name, task.version)
    assert Path(path).is_relative_to(ray_session), "unpacked into the worker's task cache"


def test_a_lost_trial_fails_its_task_clearly_and_the_others_go_on(tmp_path: Path):
    """The audit driver with a worker lost for every nop trial of one task: that task gets an
    infra_error naming WorkerLostError, nothing of the lost trials is recorded, the others are clean."""
    require_backend("bwrap")

    class Losing(LocalExecutor):
        def submit(self, fn: Any, /, *args: Any, resources: Resources | None = None, **kwargs: Any) -> Handle:
            task = args[0] if args else None
            if (
                fn is trial_item
                and isinstance(task, Task)
                and task.path.name == "json-merge"
                and args[1].probe == "nop"
            ):
                return super().submit(_raise_lost)
            return super().submit(fn, *args, resources=resources, **kwargs)

    root = _pool(tmp_path, "pool", ["csv-sum", "json-merge"])
    with Losing(2) as executor:
        audits, results = _audit(root, "bwrap", executor)
    by_name = {Path(a.path).name: a for a in audits}
    assert by_name["csv-sum"].verdict.value == "accepted"
    lost = by_name["json-merge"]
    assert [f.code.value for f in lost.findings] == ["infra_error"]
    assert "WorkerLostError" in lost.findings[0].message and "died on each of 2 tries" in lost.findings[0].message
    version = lost.version
    assert (version, "nop", 0) not in results and (version, "oracle", 0) in results


def _raise_lost() -> None:
    raise WorkerLostError("trial_item: the worker running it died on each of 2 tries (WorkerCrashedError)")


def test_the_local_executor_never_runs_more_than_jobs_items():
    global _peak
    _peak = 0
    with LocalExecutor(3) as executor:
        handles = [executor.submit(_count, 0.05) for _ in range(12)]
        assert sorted(h.result() for h in executor.as_completed(handles))[-1] == 3
    assert _peak == 3


@pytest.mark.docker
@pytest.mark.parametrize("kind", ["local", "ray"])
def test_cancel_all_stops_pending_items_and_reaps_containers(ray_session: Path, tmp_path: Path, kind: str):
    require_backend("docker")
    import docker

    client = docker.from_env()
    task = Task.load(TASKS_REPO / "csv-sum")
    run_id = f"cancel-{uuid.uuid4().hex[:8]}"
    label = {"label": f"qaflow.run={run_id}"}
    executor: Executor = LocalExecutor(2) if kind == "local" else RayExecutor()
    with executor:
        sleepers = [executor.submit(_sleep_in_container, executor.share_task(task), run_id) for _ in range(2)]
        markers = [tmp_path / f"pending-{i}" for i in range(3)]
        pending = [executor.submit(_touch, str(m)) for m in markers]
        deadline = time.monotonic() + 120
        while len(client.api.containers(all=True, filters=label)) < 2:
            assert time.monotonic() < deadline, "the sleeping trials never started"
            assert not any(h.done() for h in sleepers), [h.result() for h in sleepers if h.done()]
            time.sleep(0.2)
        executor.cancel_all([run_id])
        for handle in pending:
            with pytest.raises(ItemCancelledError):
                handle.result()
        deadline = time.monotonic() + 60
        while not all(h.done() for h in sleepers):
            assert time.monotonic() < deadline, "a cancelled trial is still running"
            time.sleep(0.2)
        for handle in sleepers:
            if kind == "ray":  # killed; a local thread cannot be, but its container is gone so it ends
                with pytest.raises(ItemCancelledError):
                    handle.result()
    time.sleep(0.5)
    assert not any(m.exists() for m in markers), "a pending item ran after cancel_all"
    assert client.api.containers(all=True, filters=label) == []


@pytest.mark.docker
def test_ctrl_c_during_an_audit_on_ray_kills_the_trials_and_reaps_their_containers(ray_session: Path, tmp_path: Path):
    """KeyboardInterrupt in the driver while two oracle trials sleep in containers: it propagates, the
    remote trials are killed (nothing of them recorded), and no container of the run is left."""
    require_backend("docker")
    import docker

    client = docker.from_env()
    root = tmp_path / "pool"
    write_task(root, "sleepy", solve_sh="#!/bin/bash\nsleep 100\n")

    with Pool.open(root) as pool:
        pool.scan()
        run = pool.ledger.start_run(RunKind.AUDIT, {})
        label = {"label": f"qaflow.run={run.run_id}"}
        version = pool.ledger.versions()[0].version

        class Interrupted(RayExecutor):
            def wait(self, handles: Any, timeout: float | None = None) -> list[Handle]:
                done = super().wait(handles, timeout)
                nops_done = all(
                    pool.ledger.has_result(ResultKey(task_version=version, probe="nop", attempt=i)) for i in range(2)
                )
                if nops_done and len(client.api.containers(filters=label)) >= 2:
                    raise KeyboardInterrupt
                return done

        started = time.monotonic()
        with Interrupted() as executor:
            config = AuditConfig(backend="docker", **CONFIG, exhaustive=True)  # two oracle trials at once
            auditor = Auditor(pool.ledger, run.run_id, config, executor=executor)
            with pytest.raises(KeyboardInterrupt):
                auditor.audit([root / "sleepy"])
        assert time.monotonic() - started < 60, "the interrupt waited for the sleeping trials"
        assert client.api.containers(all=True, filters=label) == []
        probes = {(r.probe, r.attempt) for r in pool.ledger.results()}
        assert probes == {("build", 0), ("nop", 0), ("nop", 1)}


SOLVE = [
    ScriptedReply(tool_calls=[Call(name="write", arguments={"path": "/app/out.txt", "content": "done"})]),
    ScriptedReply(content="wrote it"),
]


@pytest.mark.bwrap
def test_a_rollout_job_through_ray_records_what_the_local_one_does(ray_session: Path, tmp_path: Path):
    require_backend("bwrap")
    config = RolloutJobConfig(
        model=LLMConfig(model="openai/scripted", script=SOLVE), efforts=[Effort.LOW, Effort.XHIGH], backend="bwrap"
    )
    records = {}
    for kind in ("local", "ray"):
        root = tmp_path / kind
        write_task(root, "a")
        write_task(root, "b", instruction="Write `done` to /app/out.txt, then stop.\n")
        executor = LocalExecutor(2) if kind == "local" else RayExecutor()
        with executor, Pool.open(root) as pool:
            report = run_rollouts(pool, config, executor=executor)
            assert (report.planned, report.ran, report.failed) == (4, 4, [])
            assert report.usage["total"]["calls"] == 8
            records[kind] = sorted(
                (
                    r.model_dump(mode="json", exclude={"timings", "run_id", "created_at", "meta"})
                    for r in pool.ledger.rollouts()
                ),
                key=lambda r: (r["task"], r["effort"], r["attempt"]),
            )
    assert records["ray"] == records["local"]
    assert all(r["full_reward"] for r in records["ray"])


def test_executor_options():
    with executor_from_options("local", None, 3) as executor:
        assert executor.kind == "local" and executor.slots == 3
    with pytest.raises(ExecutorError, match="--address needs --executor ray"):
        executor_from_options("local", "auto", 2)
    with pytest.raises(ExecutorError, match="unknown executor"):
        executor_from_options("dask", None, 2)


class _RecordingExecutor(LocalExecutor):
    def __init__(self, jobs: int):
        super().__init__(jobs)
        self.cancelled: list[object] = []
        self.reaped: list[str] = []

    def cancel(self, handles):  # type: ignore[no-untyped-def]
        handles = list(handles)
        self.cancelled += handles
        super().cancel(handles)

    def reap(self, run_ids):  # type: ignore[no-untyped-def]
        self.reaped += list(run_ids)
        return 0


def test_the_driver_hands_back_every_outcome_lets_the_caller_refill_and_reaps_when_stopped():
    from qaflow.executors.driver import Driver

    def square(n: int) -> int:
        if n == 3:
            raise ValueError("three")
        return n * n

    with _RecordingExecutor(2) as workers:
        driver: Driver[int] = Driver(workers, ["run-a"], poll_s=0.05)
        queue = list(range(6))
        seen: dict[int, object] = {}

        def refill() -> None:
            while queue and driver.in_flight < 2:
                n = queue.pop(0)
                driver.submit(n, square, n)

        def on_done(n: int, outcome: object) -> None:
            seen[n] = outcome
            if n == 5:
                driver.submit(50, square, 50)  # a finished item may ask for more

        driver.run(on_done, refill)
        assert {n: v for n, v in seen.items() if not isinstance(v, Exception)} == {
            0: 0,
            1: 1,
            2: 4,
            4: 16,
            5: 25,
            50: 2500,
        }
        assert isinstance(seen[3], ValueError) and str(seen[3]) == "three"
        assert (workers.cancelled, workers.reaped) == ([], [])

        release = threading.Event()
        driver = Driver(workers, ["run-b"], poll_s=0.05)
        driver.submit(0, release.wait, 30)
        driver.submit(1, square, 2)  # the one outcome: it stops the driver while the others wait
        driver.submit(2, release.wait, 30)
        driver.submit(3, release.wait, 30)  # queued behind the two running

        def stop(_n: int, _outcome: object) -> None:
            raise KeyboardInterrupt

        started = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            driver.run(stop)
        assert time.monotonic() - started < 10, "the interrupt waited for the running items"
        release.set()
        assert len(workers.cancelled) == 3 and workers.reaped == ["run-b"] and driver.in_flight == 0
