"""The audit runner: every probe of every task, keyed in the ledger so reruns skip finished work.

Per task: load (invalid_task) -> lint -> build (one image for all probes) -> one trial each of nop and
oracle with the verifier's reruns, then the tamper and observe probes -> mutants of the oracle's recorded
effect, code mutants and the task's disabled tests -> trials where the evidence is unclear (`probes.settling`)
-> judge -> the exploit battery. A multi-step task runs `probes.multi_step` after its build. Every trial is
a ledger result keyed (task version, probe, attempt); a rerun after a crash reuses what was recorded,
`force` redoes it. One broken task never stops the others.

The expensive part runs as work items on an executor (`qaflow.executors`; the items are
`qaflow.audit.work_items`). The driver (the thread that calls `audit` or `audit_one`) steps every task in
flight as a generator that yields the work items its probes need and receives their results
(`qaflow.audit.probes.context`), and it alone writes the ledger, each result as soon as it comes back.
"""

from __future__ import annotations

import functools
import shutil
import tempfile
import threading
import time
import traceback
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from qaflow import interrupts
from qaflow.audit.config import DEFAULT_REPEATS, AuditConfig, ProgressFn, repeats_for
from qaflow.audit.lint import lint_task
from qaflow.audit.probe_run import ProbeRun, recorded_network
from qaflow.audit.probes.build import build_finding
from qaflow.audit.probes.context import Probe, SharedTask, TaskRun, TrialRequest, Work
from qaflow.audit.probes.exploit_battery import HarnessTries, battery_probe
from qaflow.audit.probes.machine import name_stand_ins, owner_changes_on_bwrap
from qaflow.audit.probes.multi_step import audit_task_steps
from qaflow.audit.probes.single_step import single_step_probe
from qaflow.audit.recorded import at_home, failed_sandbox, record_audit, relative
from qaflow.audit.replay import replay_command
from qaflow.audit.work_items import BuildResult, RunContext, build_item, trial_item
from qaflow.errors import QaflowError, TaskError
from qaflow.executors import Executor, LocalExecutor, Resources
from qaflow.executors.driver import Driver
from qaflow.ledger import Ledger
from qaflow.models.audit import AuditFinding, TaskAudit, Verdict, verdict_for
from qaflow.models.probe_key import ProbeKey, ProbeKind
from qaflow.models.records import FindingCode, Result, ResultKey, Severity
from qaflow.models.trial import ExitStatus
from qaflow.sandbox import resolve_backend
from qaflow.sandbox.choice import backend_for_task, run_label
from qaflow.sandbox.spec import RunNetwork, RuntimeNetwork, spec_for_task
from qaflow.task import Task, snapshot_task

if TYPE_CHECKING:
    from qaflow.pool import Pool

__all__ = ["DEFAULT_REPEATS", "AuditConfig", "Auditor", "ProgressFn", "repeats_for"]

NOP, ORACLE, TAMPER, OBSERVE, BUILD = (
    ProbeKey(k) for k in (ProbeKind.NOP, ProbeKind.ORACLE, ProbeKind.TAMPER, ProbeKind.OBSERVE, ProbeKind.BUILD)
)
TASKS_PER_SLOT = 3
"""Tasks in flight per executor slot: a task's phases wait on one another (observe before mutants), and
its narrow phases (one build, one observe) would leave slots idle with one task per slot."""


@dataclass
class _InFlight:
    steps: Probe[TaskAudit]
    outcomes: list[Any] = field(default_factory=list)
    left: int = 0


class Auditor:
    """Audits task folders, recording into `ledger` under `run_id`.

    Work items run on `executor` (default: a local pool of `config.jobs` threads, closed with the
    auditor); a given executor is shared and left open. `audit` and `audit_one` may be called from
    several threads at once (repair does); each drives its own tasks.
    """

    def __init__(
        self,
        ledger: Ledger,
        run_id: str,
        config: AuditConfig,
        progress: ProgressFn | None = None,
        executor: Executor | None = None,
        pool: Pool | None = None,
    ):
        self.ledger = ledger
        self.pool = pool
        """Where a task folder that changed since the scan gets its snapshot's version recorded."""
        self.run_id = run_id
        self.config = config
        self.backend = run_label(config.backend)
        """The run's backend in words (`auto` where it is chosen per task, `_backend`)."""
        self._backends: dict[str, str] = {}
        self._backends_lock = threading.Lock()
        self.progress = progress or (lambda _msg: None)
        self._owns_executor = executor is None
        self.executor: Executor = executor if executor is not None else LocalExecutor(config.jobs)
        self._harness = HarnessTries()
        """The harness holes this auditor tried and proved, each on one task."""

    def close(self) -> None:
        if self._owns_executor:
            self.executor.close()

    def audit(self, folders: list[Path]) -> list[TaskAudit]:
        return self._drive(self._audit_steps(folder) for folder in folders)

    def audit_one(self, folder: Path) -> TaskAudit:
        return self._drive([self._audit_steps(folder)])[0]

    # -- the driver -------------------------------------------------------------------------

    def _drive(self, steps: Iterable[Probe[TaskAudit]]) -> list[TaskAudit]:
        """Step the tasks (`TASKS_PER_SLOT` per executor slot in flight, so that while one waits on a phase
        of a single trial the slots stay busy with others' work), submitting the work items they ask for
        and recording each result in the ledger as it comes back. A stop request (`qaflow.interrupts`) or
        any error of the driver cancels the items in flight and reaps the run's sandboxes; `Interrupted`
        leaves with the audits of the tasks that finished."""
        todo = deque(enumerate(steps))
        results: dict[int, TaskAudit] = {}
        active: dict[int, _InFlight] = {}
        driver: Driver[tuple[int, int, Work]] = Driver(self.executor, [self.run_id])
        limit = max(1, self.executor.slots) * TASKS_PER_SLOT

        def advance(i: int, flight: _InFlight, sent: list[Any] | None) -> None:
            while True:
                try:
                    works = flight.steps.send(sent)  # type: ignore[arg-type]  # None starts it
                except StopIteration as stop:
                    results[i] = stop.value
                    active.pop(i, None)
                    return
                if works:
                    break
                sent = []
            flight.outcomes, flight.left = [None] * len(works), len(works)
            for pos, work in enumerate(works):
                driver.submit((i, pos, work), work.fn, *work.args, resources=work.resources)

        def refill() -> None:
            while todo and len(active) < limit:
                i, task_steps = todo.popleft()
                active[i] = _InFlight(task_steps)
                advance(i, active[i], None)

        def on_done(tag: tuple[int, int, Work], outcome: Any) -> None:
            i, pos, work = tag
            if work.record is not None and not isinstance(outcome, BaseException):
                try:
                    work.record(outcome)
                except Exception as e:
                    outcome = e
            flight = active[i]
            flight.outcomes[pos] = outcome
            flight.left -= 1
            if flight.left == 0:
                advance(i, flight, flight.outcomes)

        try:
            driver.run(on_done, refill)
        except BaseException as e:
            for flight in active.values():
                flight.steps.close()
            if isinstance(e, interrupts.Interrupted):
                e.done = [results[i] for i in sorted(results)]
            raise
        return [results[i] for i in range(len(results))]

    # -- one task ---------------------------------------------------------------------------

    def _audit_steps(self, folder: Path) -> Probe[TaskAudit]:
        """Audit `folder` from a snapshot of its files taken now: every trial runs the bytes whose version the
        results are recorded under, whatever happens to the folder meanwhile."""
        into = Path(tempfile.mkdtemp(prefix="qaflow-snapshot-"))
        try:
            return (yield from self._audit_snapshot(folder, into))
        finally:
            shutil.rmtree(into, ignore_errors=True)

    def _audit_snapshot(self, folder: Path, into: Path) -> Probe[TaskAudit]:
        started = time.perf_counter()
        try:
            task = snapshot_task(folder, into)
        except TaskError as e:
            finding = AuditFinding(
                code=FindingCode.INVALID_TASK,
                message=f"{relative(e.path, folder)}: {e.reason}",
                evidence={"file": relative(e.path, folder), "reason": e.reason},
            )
            self.progress(f"{folder.name}: invalid")
            return TaskAudit(
                task=folder.name,
                path=str(folder),
                version=None,
                verdict=Verdict.INVALID,
                findings=[finding],
                timings={"total": time.perf_counter() - started},
            )
        pool = self.pool if self.pool is not None and self.pool.root in folder.resolve().parents else None
        if pool is not None and self.ledger.get_version(task.version) is None:
            entry = pool.record_snapshot(folder, task.path)
            self.progress(f"{folder.name}: changed since the scan, audited as version {entry.version[:12]}")
        try:
            audit = yield from self._audit_task(task, folder)
        except Exception as e:
            # A sandbox that cannot run at all is infra_error; anything else is a bug of the audit
            # itself, kept with its traceback so it can be fixed, and never passed off as a verdict.
            code = FindingCode.INFRA_ERROR if isinstance(e, QaflowError) else FindingCode.AUDIT_ERROR
            audit = TaskAudit(
                task=task.name,
                path=str(folder),
                version=task.version,
                verdict=Verdict.NEEDS_REPAIR,
                findings=[
                    AuditFinding(
                        code=code,
                        message=f"the audit could not run: {type(e).__name__}: {e}",
                        evidence={"error": type(e).__name__, "traceback": "".join(traceback.format_exception(e))},
                    )
                ],
            )
        audit.timings["total"] = time.perf_counter() - started
        audit = TaskAudit.model_validate(at_home(audit.model_dump(mode="json"), task))
        with self._backends_lock:  # the one its work ran on; none when no backend could be chosen
            audit.backend = self._backends.get(task.version or str(task.path))
        for finding in audit.findings:
            finding.replay = replay_command(
                finding, str(folder), backend=audit.backend or self.config.backend, offline=self.config.offline,
                network=self.config.network.value,
            )  # fmt: skip
        record_audit(self.ledger, self.run_id, task, audit)
        codes = sorted({f.code.value for f in audit.findings if f.severity is Severity.ERROR})
        shown = f" ({', '.join(codes)})" if codes else ""
        self.progress(f"{task.name}: {audit.verdict.value}{shown}, {audit.timings['total']:.1f} s")
        return audit

    def _task_run(self, task: Task) -> TaskRun:
        shared, resources = self.executor.share_task(task), self._resources(task)

        def trials(requests: list[TrialRequest], *, shared: SharedTask | None = None) -> Probe[list[ProbeRun]]:
            return self._trials(task, run.shared if shared is None else shared, resources, requests)

        run = TaskRun(task, shared, resources, self._context(task), self.config, trials, self.executor.share_task)
        return run

    def _context(self, task: Task) -> RunContext:
        network = RunNetwork(offline=self.config.offline, network=self.config.network)
        return RunContext(backend=self._backend(task), run_id=self.run_id, network=network)

    def _audit_task(self, task: Task, folder: Path) -> Probe[TaskAudit]:
        findings = lint_task(task, self.config.lint)
        probes: dict[str, object] = {}
        audit = TaskAudit(task=task.name, path=str(folder), version=task.version, verdict=Verdict.ACCEPTED)
        run = self._task_run(task)
        t0 = time.perf_counter()
        build = yield from self._build(run)
        audit.timings["build"] = time.perf_counter() - t0
        probes["build"] = build.payload()
        if not build.ok:
            findings.append(build_finding(build, run.backend, self.config.offline))
            audit.findings, audit.probes = findings, probes
            audit.verdict = verdict_for(findings)
            return audit

        if task.config.steps:
            audit.findings, audit.probes = findings, probes
            limits = {"repeats": self.config.repeats, "max_mutants": self.config.max_mutants}
            battery = functools.partial(battery_probe, run, self._harness) if self.config.observe else None
            return (yield from audit_task_steps(task, run.trials, audit, **limits, battery=battery))
        t0 = time.perf_counter()
        findings += yield from single_step_probe(run, self._harness, probes)
        audit.timings["trials"] = time.perf_counter() - t0
        name_stand_ins(findings, probes)
        if run.backend == "bwrap":
            owner_changes_on_bwrap(findings)
        audit.findings, audit.probes = findings, probes
        audit.verdict = verdict_for(findings)
        return audit

    def _resources(self, task: Task) -> Resources:
        """What each of the task's items declares: the task's CPUs and memory, else the executor's default."""
        env, default = task.config.environment, self.executor.resources
        return Resources(cpus=env.cpus or default.cpus, memory_mb=env.memory_mb or default.memory_mb)

    def _build(self, run: TaskRun) -> Probe[BuildResult]:
        """Build once for all probes (always asked of the backend: a cached image makes it a no-op,
        and an image pruned since the last run is rebuilt). On a cluster every worker builds (or
        finds cached) the image on its own daemon; this item says whether it builds at all."""
        task, backend = run.task, run.backend
        (outcome,) = yield [run.work(build_item)]
        if isinstance(outcome, BaseException):
            raise outcome
        result = BuildResult.model_validate(at_home(outcome.result.model_dump(mode="json"), task))
        status = ExitStatus.OK if result.ok else ExitStatus.ERROR
        key = ResultKey(task_version=task.version, probe=str(BUILD), attempt=0)
        known = self.ledger.get_result(key)
        changed = known is None or BuildResult.model_validate(known.payload) != result or known.backend != backend
        if self.config.force or changed:
            self._put(
                Result(task_version=task.version, probe=str(BUILD), attempt=0, run_id=self.run_id, backend=backend,
                       status=status, payload=result.payload(), duration_s=outcome.duration_s)
            )  # fmt: skip
        return result

    def _trials(
        self, task: Task, shared: SharedTask, resources: Resources, requests: list[TrialRequest]
    ) -> Probe[list[ProbeRun]]:
        """The ProbeRuns of `requests`, in order: recorded ones from the ledger, the others run as work items
        (each recorded as it comes back; one whose sandbox failed is run once more). The first failed item is
        raised once all have come back, so that every finished trial is kept."""
        context = self._context(task)
        backend = context.backend
        runs: list[ProbeRun | None] = [None] * len(requests)
        works: list[Work] = []
        where: list[int] = []
        for i, request in enumerate(requests):
            if not self.config.force:
                key = ResultKey(task_version=task.version, probe=request.probe, attempt=request.attempt)
                cached = self.ledger.get_result(key)
                if cached is not None and cached.backend == backend and self._same_network(cached.payload):
                    known = ProbeRun.model_validate(cached.payload)
                    if not failed_sandbox(known):
                        runs[i] = known
                        continue
            work = Work(trial_item, (shared, request, context), resources, record=lambda r: self._put_run(task, r))
            works.append(work)
            where.append(i)
        outcomes = list((yield works) if works else [])
        again = [j for j, o in enumerate(outcomes) if isinstance(o, ProbeRun) and failed_sandbox(o)]
        if again:  # a sandbox the machine failed (killed, paused, out of resources) gets one more try now
            for j, o in zip(again, (yield [works[j] for j in again]), strict=True):
                if isinstance(o, ProbeRun):
                    outcomes[j] = o
        failed = [o for o in outcomes if isinstance(o, BaseException)]
        if failed:
            raise failed[0]
        for i, r in zip(where, outcomes, strict=True):
            runs[i] = r
        return [r for r in runs if r is not None]

    def _backend(self, task: Task) -> str:
        """The backend `task`'s work runs on: the one asked for, or with `auto` the one `choose_backend` picks
        for it (on the driver, once per task version and run)."""
        key = task.version or str(task.path)
        with self._backends_lock:
            known = self._backends.get(key)
        if known is None:
            network = RunNetwork(offline=self.config.offline, network=self.config.network)
            try:
                spec = spec_for_task(task, run_id=self.run_id, network=network)
            except (QaflowError, ValueError):  # the trial reports it; any backend does
                known = resolve_backend(self.config.backend)
            else:
                known = backend_for_task(task, spec, self.config.backend)
            with self._backends_lock:
                self._backends[key] = known
        return known

    def _same_network(self, payload: dict[str, Any]) -> bool:
        """Whether a recorded trial ran with this run's runtime network (`trial_item` marks `none`)."""
        return (recorded_network(payload) or RuntimeNetwork.TASK.value) == self.config.network.value

    def _put_run(self, task: Task, run: ProbeRun) -> None:
        self._put(
            Result(
                task_version=task.version,
                probe=run.probe,
                attempt=run.attempt,
                run_id=self.run_id,
                backend=self._backend(task),
                status=run.status,
                reward=run.reward,
                payload=at_home(run.model_dump(mode="json"), task),
                duration_s=run.duration_s,
            )
        )

    def _put(self, result: Result) -> None:
        self.ledger.put_result(result, force=True)
