"""The audit runner: every probe of every task, keyed in the ledger so reruns skip finished work.

Per task: load (invalid_task) -> lint -> build (one image for all probes) -> nop and oracle
repeated N times plus the tamper probe, concurrently -> mutants from the oracle's recorded effect
-> judge. Every trial is a ledger result keyed (task version, probe, attempt); a rerun after a
crash reuses what was recorded, `force` redoes it. One broken task never stops the others.

The expensive part runs as work items on an executor (`qaflow.executors`): `build_item` and
`trial_item` are pure top-level functions of picklable arguments (the task, or its packed folder;
the probe's agent as a `ProbeAgent` description) that return results; they never touch the ledger.
The driver (the thread that calls `audit` or `audit_one`) steps every task in flight as a
generator that yields the work items it needs and receives their results, and it alone writes the
ledger, each result as soon as it comes back.
"""

from __future__ import annotations

import functools
import json
import re
import tempfile
import threading
import time
import traceback
from collections import Counter, deque
from collections.abc import Callable, Generator, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from qaflow import interrupts
from qaflow.audit.battery import Evidence, battery_probes
from qaflow.audit.differential import DIFF_SCRIPT, diff_config, judge_code_mutants, plan_code_mutants
from qaflow.audit.effects import Effect
from qaflow.audit.exploits import harness_exploits, harness_note, leftover_findings
from qaflow.audit.git_history import git_findings
from qaflow.audit.infra import classify, sandbox_failed, stand_in_sign
from qaflow.audit.inprocess import (
    imported_modules,
    verifier_texts,
)
from qaflow.audit.judge import effect_lost, judge
from qaflow.audit.lint import LintConfig, lint_task
from qaflow.audit.mutant_lookup import focus_text
from qaflow.audit.mutants import Mutant, MutantAgent, MutantKind, deliverables, make_mutants, oracle_state
from qaflow.audit.observation import Observation
from qaflow.audit.observe import observe_trial
from qaflow.audit.probe_run import ProbeAgent, ProbeRun, recorded_network, tail
from qaflow.audit.replay import replay_command, run_command
from qaflow.audit.settle import (
    MIN_CONFIRM_RUNS,
    added_attempts,
    confirms_again,
    escalations,
    verifier_reruns,
)
from qaflow.audit.skipped_tests import judge_enabled, plan_enabled_mutants, write_enabled
from qaflow.audit.steps import audit_task_steps, step_view
from qaflow.audit.tamper import trusted_paths
from qaflow.errors import BaseImageUnavailableError, BuildError, QaflowError, TaskError, UnsupportedError
from qaflow.executors import Executor, LocalExecutor, Resources, TaskRef, resolve_task
from qaflow.executors.driver import Driver
from qaflow.ledger import Ledger
from qaflow.models.audit import AuditFinding, TaskAudit, Verdict, verdict_for
from qaflow.models.records import Finding, FindingCode, Result, ResultKey, Severity
from qaflow.models.trial import ExitStatus
from qaflow.sandbox import backend_class, open_sandbox, resolve_backend
from qaflow.sandbox.choice import backend_for_task, run_label
from qaflow.sandbox.image_names import declared_python
from qaflow.sandbox.spec import RunNetwork, RuntimeNetwork, network_from_env, offline_from_env, spec_for_task
from qaflow.task import Task, VerifierEnvironmentMode, copy_task_folder
from qaflow.task_steps import StepTask
from qaflow.trial import run_trial

MAX_HARNESS_TRIES = 3
"""Tasks a harness hole is tried on, per run, until one verifier is fooled by it."""


def repeats_for(miss_probability: float = 0.05, flip: float = 0.5) -> int:
    """Runs needed so a verifier passing with probability `flip` shows both outcomes with
    probability >= 1 - miss_probability: P(all agree) = flip^n + (1-flip)^n."""
    n = 1
    while flip**n + (1 - flip) ** n > miss_probability:
        n += 1
    return n


DEFAULT_REPEATS = repeats_for()  # 6: a 50% coin-flip verifier is caught with probability 96.9%


class AuditConfig(BaseModel):
    """How `qaflow audit` audits; the pipeline's `audit:` section is this same model."""

    model_config = ConfigDict(extra="forbid")
    backend: str = Field("auto", description="auto, docker or bwrap")
    repeats: int = Field(
        DEFAULT_REPEATS,
        ge=1,
        description="Outcomes of each of nop and oracle that must agree (flakiness): one trial each plus verifier "
        "reruns on its final state, and more trials only where those disagree, fall short or the oracle's outputs "
        "vary (README, 'How many trials'); with exhaustive, trials of each",
    )
    exhaustive: bool = Field(
        False, description="The fixed plan: `repeats` full trials each of nop and oracle whatever the evidence says"
    )
    jobs: int = Field(2, ge=1, description="Trials run concurrently")
    max_mutants: int = Field(12, ge=0, description="Wrong solutions derived from the oracle, per task")
    code_mutants: bool = Field(
        True,
        description="One-change mutants of Python modules the oracle wrote and the verifier imported, judged "
        "against the oracle on the tests' inputs (needs the observe probe)",
    )
    observe: bool = Field(
        True,
        description="Observe the verifier's trust boundary on the oracle's final state and, where it takes "
        "task-owned inputs the agent can write, attack them (the exploit battery)",
    )
    verifier_reruns: int = Field(
        8,
        ge=0,
        description="Observe: plain reruns of the verifier on the oracle's final state (a cheap sign of a "
        "verifier that decides by chance); when they disagree with oracle runs that all agree, 2 x repeats "
        "more oracle trials (at least 8) decide whether it is flaky",
    )
    force: bool = Field(False, description="Redo probes already recorded in the ledger")
    lint: LintConfig = Field(default_factory=LintConfig)
    offline: bool = Field(default_factory=offline_from_env, description="Build without network ($QAFLOW_OFFLINE)")
    network: RuntimeNetwork = Field(
        default_factory=network_from_env, description="Runtime network: task (as declared) or none ($QAFLOW_NETWORK)"
    )


ProgressFn = Callable[[str], None]


class BuildOutcome(BaseModel):
    """What `build_item` returns: the ledger payload of the build probe and how long it took."""

    payload: dict[str, str]
    duration_s: float = 0.0


MUTANT_TIMEOUT_FLOOR_S = 60.0
TASKS_PER_SLOT = 3
"""Tasks in flight per executor slot: a task's phases wait on one another (observe before mutants), and
its narrow phases (one build, one observe) would leave slots idle with one task per slot."""


def build_item(
    task: Task | TaskRef, backend: str, run_id: str, offline: bool = False, network: str = "task"
) -> BuildOutcome:
    """Work item: build (or find cached) the task's environment on the backend where it runs
    (`offline`, `network`: the run's `RunNetwork`, as plain values)."""
    t0 = time.perf_counter()
    payload: dict[str, str] = {"status": "ok"}
    loaded = resolve_task(task)
    run_network = RunNetwork(offline=offline, network=RuntimeNetwork(network))
    try:
        spec = spec_for_task(loaded, run_id=run_id, network=run_network)
        sandboxes = backend_class(backend)()
        sandboxes.build(spec)
        stand_ins = getattr(sandboxes, "stand_ins", None)
        if stand_ins is not None and (used := stand_ins(spec)):
            payload["stand_ins"] = json.dumps(used, sort_keys=True)
            # the stand-in's own python3 (one short container per stand-in and process), not each task image's
            declared = {(v, local) for ref, local in used.items() if (v := declared_python(ref)) is not None}
            python_of = getattr(sandboxes, "python_version", None)
            if len(declared) == 1 and python_of is not None:
                version, local = declared.pop()
                if (found := python_of(local)) is not None:
                    payload["python"] = json.dumps({"declared": version, "found": found}, sort_keys=True)
    except BuildError as e:
        payload = {"status": "failed", "error": str(e).splitlines()[0], "log_tail": tail(e.log_tail, 3000)}
        if isinstance(e, BaseImageUnavailableError):
            payload["base_unavailable"] = "1"
        if e.stand_ins:
            payload["stand_ins"] = json.dumps(e.stand_ins, sort_keys=True)
    except UnsupportedError as e:
        payload = {"status": "failed", "unsupported": "1", "error": str(e)}
    return BuildOutcome(payload=payload, duration_s=time.perf_counter() - t0)


DIFF_DIR = "/tmp/qaflow-differential"
DIFF_TIMEOUT_S = 120.0


def differential_item(
    task: Task | TaskRef, base: Mutant, config: str, backend: str, run_id: str, offline: bool = False,
    network: str = "task",
) -> dict[str, Any]:  # fmt: skip
    """Work item: in a fresh sandbox of the task's image with the oracle's state (`base`) in place, call the
    oracle's and a code mutant's functions on the tests' inputs (`differential.DIFF_SCRIPT`, `config`)."""
    loaded = resolve_task(task)
    spec = spec_for_task(loaded, run_id=run_id, network=RunNetwork(offline=offline, network=RuntimeNetwork(network)))
    with open_sandbox(spec, backend) as box:
        MutantAgent(base).run(loaded, box)
        box.put(f"{DIFF_DIR}/config.json", config.encode())
        box.put(f"{DIFF_DIR}/diff.py", DIFF_SCRIPT.encode())
        user = loaded.config.agent.user
        done = box.exec(
            ["python3", f"{DIFF_DIR}/diff.py", f"{DIFF_DIR}/config.json"], timeout=DIFF_TIMEOUT_S, user=user
        )
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
    try:
        outcome = json.loads(lines[-1]) if lines else None
    except ValueError:
        outcome = None
    if not isinstance(outcome, dict):
        return {"error": f"exit {done.exit_code}: {done.stderr[-300:]}", "differs": []}
    return outcome


def trial_item(
    task: Task | TaskRef,
    probe: str,
    attempt: int,
    agent: ProbeAgent,
    backend: str,
    run_id: str,
    clear: bool,
    offline: bool = False,
    network: str = "task",
) -> ProbeRun:
    """Work item: one probe trial (the agent rebuilt from its description), as a `ProbeRun`."""
    run_network = RunNetwork(offline=offline, network=RuntimeNetwork(network))
    if agent.kind == "observe":
        observed, observation = observe_trial(
            resolve_task(task),
            backend=backend,
            run_id=run_id,
            network=run_network,
            reruns=agent.reruns,
            outputs=agent.outputs,
            last_step=agent.step,
        )
        run = ProbeRun.of(probe, attempt, observed)
        run.observation = observation
        if run_network.network is not RuntimeNetwork.TASK:
            run.network = run_network.network.value
        return run
    built = agent.agent()
    result = run_trial(
        _capped(resolve_task(task), agent.verifier_timeout_sec),
        built,
        backend=backend,
        run_id=run_id,
        clear_verifier_logs=clear,
        network=run_network,
        last_step=agent.step,
        verifier_reruns=agent.reruns,
    )
    run = ProbeRun.of(probe, attempt, result)
    if run_network.network is not RuntimeNetwork.TASK:
        run.network = run_network.network.value
    effect = getattr(built, "effect", None)
    if isinstance(effect, Effect):
        run.effect = effect
    effects = getattr(built, "effects", None)
    if effects:
        run.effects = dict(effects)
    return run


def _capped(task: Task, seconds: float | None) -> Task:
    """`task` with its verifier's timeout cut to `seconds` (a copy; the task itself may be shared by threads)."""
    current = task.config.verifier.timeout_sec
    if seconds is None or (current is not None and seconds >= current):
        return task
    verifier = task.config.verifier.model_copy(update={"timeout_sec": seconds})
    return task.model_copy(update={"config": task.config.model_copy(update={"verifier": verifier})})


def mutant_timeout(oracle: list[ProbeRun]) -> float:
    """The verifier timeout of a code mutant's trial: 5x the longest oracle trial, at least a minute (a mutant
    that spins forever costs that, not the task's whole verifier timeout)."""
    return max(MUTANT_TIMEOUT_FLOOR_S, 5 * max((r.duration_s for r in oracle), default=0.0))


@dataclass
class _Work:
    """One work item a task's steps ask for; `record` runs in the driver when its result comes back."""

    fn: Callable[..., Any]
    args: tuple[Any, ...]
    resources: Resources | None = None
    record: Callable[[Any], None] | None = None


Steps = Generator[list[_Work], list[Any], TaskAudit]
"""A task's audit: yields the work items it needs next, receives their results (an exception for an
item that failed) in the same order, returns the TaskAudit."""


@dataclass
class _InFlight:
    steps: Steps
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
    ):
        self.ledger = ledger
        self.run_id = run_id
        self.config = config
        self.backend = run_label(config.backend)
        """The run's backend in words (`auto` where it is chosen per task, `_backend`)."""
        self._backends: dict[str, str] = {}
        self._backends_lock = threading.Lock()
        self.progress = progress or (lambda _msg: None)
        self._owns_executor = executor is None
        self.executor: Executor = executor if executor is not None else LocalExecutor(config.jobs)
        self._harness_proven: set[str] = set()
        """The harness holes (`exploits.harness_exploits`) this auditor proved, each on one task."""
        self._harness_tries: Counter[str] = Counter()

    def close(self) -> None:
        if self._owns_executor:
            self.executor.close()

    def audit(self, folders: list[Path]) -> list[TaskAudit]:
        return self._drive(self._audit_steps(folder) for folder in folders)

    def audit_one(self, folder: Path) -> TaskAudit:
        return self._drive([self._audit_steps(folder)])[0]

    # -- the driver -------------------------------------------------------------------------

    def _drive(self, steps: Iterable[Steps]) -> list[TaskAudit]:
        """Step the tasks (`TASKS_PER_SLOT` per executor slot in flight, so that while one waits on a phase
        of a single trial the slots stay busy with others' work), submitting the work items they ask for
        and recording each result in the ledger as it comes back. A stop request (`qaflow.interrupts`) or
        any error of the driver cancels the items in flight and reaps the run's sandboxes; `Interrupted`
        leaves with the audits of the tasks that finished."""
        todo = deque(enumerate(steps))
        results: dict[int, TaskAudit] = {}
        active: dict[int, _InFlight] = {}
        driver: Driver[tuple[int, int, _Work]] = Driver(self.executor, [self.run_id])
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

        def on_done(tag: tuple[int, int, _Work], outcome: Any) -> None:
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

    def _audit_steps(self, folder: Path) -> Steps:
        started = time.perf_counter()
        try:
            task = Task.load(folder)
        except TaskError as e:
            finding = AuditFinding(
                code=FindingCode.INVALID_TASK,
                message=f"{_rel(e.path, folder)}: {e.reason}",
                evidence={"file": _rel(e.path, folder), "reason": e.reason},
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
        with self._backends_lock:  # the one its work ran on; none when no backend could be chosen
            audit.backend = self._backends.get(task.version or str(task.path))
        for finding in audit.findings:
            finding.replay = replay_command(
                finding, str(folder), backend=audit.backend or self.config.backend, offline=self.config.offline,
                network=self.config.network.value,
            )  # fmt: skip
        self._record(task, audit)
        codes = sorted({f.code.value for f in audit.findings if f.severity is Severity.ERROR})
        shown = f" ({', '.join(codes)})" if codes else ""
        self.progress(f"{task.name}: {audit.verdict.value}{shown}, {audit.timings['total']:.1f} s")
        return audit

    def _audit_task(self, task: Task, folder: Path) -> Generator[list[_Work], list[Any], TaskAudit]:
        findings = lint_task(task, self.config.lint)
        probes: dict[str, object] = {}
        audit = TaskAudit(task=task.name, path=str(folder), version=task.version, verdict=Verdict.ACCEPTED)
        shared = self.executor.share_task(task)
        resources = self._resources(task)
        t0 = time.perf_counter()
        build = yield from self._build(task, shared, resources)
        audit.timings["build"] = time.perf_counter() - t0
        probes["build"] = {**build, **{k: json.loads(build[k]) for k in ("stand_ins", "python") if k in build}}
        if build.get("status") != "ok":
            findings.append(self._build_finding(task, build))
            audit.findings, audit.probes = findings, probes
            audit.verdict = verdict_for(findings)
            return audit

        if task.config.steps:
            audit.findings, audit.probes = findings, probes
            trials = functools.partial(self._trials, task, shared, resources)
            limits = {"repeats": self.config.repeats, "max_mutants": self.config.max_mutants}
            battery = functools.partial(self._battery, task, shared, resources) if self.config.observe else None
            return (yield from audit_task_steps(task, trials, audit, **limits, battery=battery))
        n = self.config.repeats
        observing = self.config.observe and task.verifier_mode is VerifierEnvironmentMode.SHARED
        adaptive = observing and not self.config.exhaustive
        first = n if not adaptive else 1
        items = [("nop", i, ProbeAgent.nop(reruns=n - 1 if adaptive else 0), True) for i in range(first)]
        items += [("oracle", 0, ProbeAgent.oracle(record=True), True)]
        items += [("oracle", i, ProbeAgent.oracle(), True) for i in range(1, first)]
        t0 = time.perf_counter()
        runs = yield from self._trials(task, shared, resources, items)
        by_probe: dict[str, list[ProbeRun]] = {}
        for run in runs:
            by_probe.setdefault(run.probe, []).append(run)
        oracle = by_probe.get("oracle", [])

        # phase 2 needs the oracle: the reward file it writes (tamper) and its recorded effect (mutants)
        sources = sorted({r.reward_source for r in oracle if r.reward_source}) or ["reward.txt"]
        phase2 = [("tamper", 0, ProbeAgent.tamper(sources, trusted_paths(task)), False)]
        effect = oracle[0].effect if oracle else None
        mutate = effect is not None and all(r.full for r in oracle) and self.config.max_mutants > 0
        mutants: list[Mutant] = []
        if observing:
            outputs = effect.output_digests() if effect is not None else {}
            reruns = max(self.config.verifier_reruns, 2 * n - 1) if adaptive else self.config.verifier_reruns
            observe = ProbeAgent.observe(reruns=reruns, outputs=outputs)
            phase2.append(("observe", 0, observe, True))
        elif mutate and effect is not None:
            mutants = self._mutants(task, effect, None, probes)
            phase2 += [(f"mutant:{m.name}", 0, ProbeAgent.of_mutant(m), True) for m in mutants]
        tamper, *mutant_runs = yield from self._trials(task, shared, resources, phase2)
        observe_run = mutant_runs.pop() if observing else None
        code_findings: list[AuditFinding] = []
        cap = mutant_timeout(oracle)
        if observe_run is not None and mutate and effect is not None:
            # mutants wait for the observation: a file the verifier never reads is no wrong answer
            observation = observe_run.observation
            mutants = self._mutants(task, effect, observation, probes)
            items = [(f"mutant:{m.name}", 0, ProbeAgent.of_mutant(m), True) for m in mutants]
            mutant_runs = (yield from self._trials(task, shared, resources, items)) if items else []
            if observation is not None and self.config.code_mutants:
                code_findings = yield from self._code_mutants(task, shared, resources, effect, observation, probes, cap)
        if mutate and effect is not None and self.config.code_mutants:
            code_findings += yield from self._enabled_tests(task, shared, resources, effect, probes, cap)
        if observe_run is not None:
            if adaptive:
                yield from self._settle(task, shared, resources, by_probe, observe_run, effect, probes)
                oracle = by_probe.get("oracle", [])
            oracle = yield from self._confirm_oracle(task, shared, resources, oracle, observe_run, probes)
            by_probe["oracle"] = oracle
        for m, run in zip(mutants, mutant_runs, strict=True):
            run.description = m.description
        findings += judge(by_probe.get("nop", []), oracle, tamper, mutant_runs) + code_findings
        findings += effect_lost(oracle)
        if observe_run is not None:
            findings += yield from self._battery(task, shared, resources, observe_run, effect, by_probe, probes)
        audit.timings["trials"] = time.perf_counter() - t0
        by_probe["tamper"] = [tamper]
        for name, group in by_probe.items():
            view: dict[str, object] = {"rewards": [r.reward for r in group], "exit": [r.exit_status for r in group]}
            outcomes = [o for r in group for o in r.reruns]
            if outcomes:
                view |= {"reruns": len(outcomes), "reruns_full": sum(outcomes)}
            probes[name] = view
        probes["mutant_rewards"] = {r.probe.removeprefix("mutant:"): r.reward for r in mutant_runs}
        _name_stand_ins(findings, probes)
        if self._backend(task) == "bwrap":
            _owner_changes_on_bwrap(findings)
        audit.findings, audit.probes = findings, probes
        audit.verdict = verdict_for(findings)
        return audit

    def _mutants(
        self, task: Task, effect: Effect, observation: Observation | None, probes: dict[str, object]
    ) -> list[Mutant]:
        """The mutants of the oracle's effect whose targets are deliverables (`mutants.deliverables`)."""
        focus = focus_text(task)
        mutants = make_mutants(
            effect, limit=self.config.max_mutants, focus=focus, deliverable=deliverables(observation, focus)
        )
        probes["mutants"] = {"generated": len(mutants), "changes": len(effect.changes)}
        return mutants

    def _code_mutants(
        self,
        task: Task,
        shared: Any,
        resources: Resources,
        effect: Effect,
        observation: Observation,
        probes: dict[str, object],
        cap: float,
    ) -> Generator[list[_Work], list[Any], list[AuditFinding]]:
        """Code mutants of the modules the verifier imported that the oracle wrote, each run like a mutant;
        a survivor counts only where it computes something else than the oracle on the tests' inputs."""
        plans, why = plan_code_mutants(imported_modules(observation, effect), effect, task.tests_dir)
        view: dict[str, object] = {"generated": len(plans)}
        probes["code_mutants"] = view
        if not plans:
            view["skipped"] = why
            return []
        items = [(f"mutant:{p.mutant.name}", 0, ProbeAgent.of_mutant(p.mutant, cap), True) for p in plans]
        runs = yield from self._trials(task, shared, resources, items)
        survivors = [p for p, run in zip(plans, runs, strict=True) if run.full]
        view["survived"] = [p.mutant.name for p in survivors]
        if not survivors:
            return []
        base, modes, links = oracle_state(effect)
        state = Mutant(name="oracle", kind=MutantKind.EMPTY_ALL, description="the oracle's state", writes=base,
                       modes={p: m for p, m in modes.items() if base.get(p) is not None}, links=links)  # fmt: skip
        works = [
            _Work(
                differential_item,
                (
                    shared,
                    state,
                    diff_config(p.path, p.oracle, p.source, p.calls),
                    self._backend(task),
                    self.run_id,
                    *self._network_args(),
                ),
                resources,
            )
            for p in survivors
        ]
        outcomes = yield works
        checked = []
        for plan, outcome in zip(survivors, outcomes, strict=True):
            if isinstance(outcome, BaseException):
                outcome = {"error": f"{type(outcome).__name__}: {outcome}", "differs": []}
            checked.append((plan, outcome))
        view["equivalent"] = [p.mutant.name for p, o in checked if not o.get("differs") and not o.get("error")]
        view["errors"] = {p.mutant.name: o["error"] for p, o in checked if o.get("error")}
        return judge_code_mutants(checked, str(task.path))

    def _enabled_tests(
        self, task: Task, shared: Any, resources: Resources, effect: Effect, probes: dict[str, object], cap: float
    ) -> Generator[list[_Work], list[Any], list[AuditFinding]]:
        """Code mutants of C-family files the oracle wrote, where the tests disable some of their own tests:
        the survivors, and the oracle, run again with those tests enabled (`skipped_tests`); a survivor the
        enabled tests reject is a wrong answer the verifier takes."""
        enabled, mutants, why = plan_enabled_mutants(effect, task.tests_dir)
        view: dict[str, object] = {"disabled": [{"file": e.path, "how": e.how, "count": e.count} for e in enabled]}
        if not enabled:
            return []
        probes["enabled_tests"] = view
        if not mutants:
            view["skipped"] = why
            return []
        items = [(f"mutant:{m.name}", 0, ProbeAgent.of_mutant(m, cap), True) for m, _ in mutants]
        runs = yield from self._trials(task, shared, resources, items)
        survivors = [(m, diff) for (m, diff), run in zip(mutants, runs, strict=True) if run.full]
        view["mutants"], view["survived"] = len(mutants), [m.name for m, _ in survivors]
        if not survivors:
            return []
        with tempfile.TemporaryDirectory(prefix="qaflow-enabled-") as tmp:
            try:
                folder = copy_task_folder(task.path, Path(tmp) / task.path.name)
                write_enabled(folder / "tests", enabled)
                twin = self.executor.share_task(Task.load(folder))
            except (OSError, QaflowError) as e:
                view["skipped"] = f"the copy with the tests enabled could not be made: {e}"
                return []
            capped_oracle = ProbeAgent.oracle().model_copy(update={"verifier_timeout_sec": cap})
            items = [("enabled:oracle", 0, capped_oracle, True)]
            items += [(f"enabled:mutant:{m.name}", 0, ProbeAgent.of_mutant(m, cap), True) for m, _ in survivors]
            oracle_run, *mutant_runs = yield from self._trials(task, twin, resources, items)
        view["oracle_reward"] = oracle_run.reward
        if not oracle_run.full:
            view["skipped"] = "the reference solution fails the disabled tests: they are no specification"
            return []
        wrong = [
            pair
            for pair, run in zip(survivors, mutant_runs, strict=True)
            if not run.full and run.error is None and not run.verifier_timed_out
        ]
        view["rejected_by_enabled"] = [m.name for m, _ in wrong]
        return judge_enabled(str(task.path), enabled, wrong)

    def _settle(
        self,
        task: Task,
        shared: Any,
        resources: Resources,
        by_probe: dict[str, list[ProbeRun]],
        observe_run: ProbeRun,
        effect: Effect | None,
        probes: dict[str, object],
    ) -> Generator[list[_Work], list[Any], list[ProbeRun]]:
        """The evidence-driven plan's stopping rule (`settle.escalations`): where one trial each of nop and
        oracle, their reruns and the observed oracle run leave a side unclear, that side gets the trials
        `settle.added_attempts` asks for (the fixed plan's, or the outcomes it lacks); `by_probe` gets them.
        Returns the added runs."""
        nop, oracle, n = by_probe.get("nop", []), by_probe.get("oracle", []), self.config.repeats
        why = escalations(nop, oracle, observe_run, effect, n)
        probes["evidence"] = {"escalated": bool(why), "why": [e.why for e in why]}
        if not why:
            return []
        items = [("nop", i, ProbeAgent.nop(), True) for i in added_attempts(why, "nop", nop, n)]
        items += [("oracle", i, ProbeAgent.oracle(), True) for i in added_attempts(why, "oracle", oracle, n)]
        more = yield from self._trials(task, shared, resources, items)
        for run in more:
            by_probe.setdefault(run.probe, []).append(run)
        return more

    def _confirm_oracle(
        self,
        task: Task,
        shared: Any,
        resources: Resources,
        oracle: list[ProbeRun],
        observe_run: ProbeRun,
        probes: dict[str, object],
    ) -> Generator[list[_Work], list[Any], list[ProbeRun]]:
        """The oracle runs, with rounds of 2 x repeats (at least `MIN_CONFIRM_RUNS`) more while `confirms_again`.

        N trials that all agree miss a coin-flip verifier with probability 2 x 0.5^N; the reruns make that
        rare for the price of a few verifier runs, and only full trials decide `flaky` (a verifier that
        changes the state it checks disagrees with its reruns and is still judged on trials alone)."""
        reruns = verifier_reruns(observe_run)
        probes["verifier_reruns"] = {"runs": len(reruns), "full": sum(reruns)}
        extra = max(2 * self.config.repeats, MIN_CONFIRM_RUNS)
        more: list[ProbeRun] = []
        rounds = 0
        while confirms_again([*oracle, *more], observe_run, rounds):
            start = len(oracle) + len(more)
            items = [("oracle", i, ProbeAgent.oracle(), True) for i in range(start, start + extra)]
            more += yield from self._trials(task, shared, resources, items)
            rounds += 1
        if rounds:
            probes["oracle_confirm"] = {"extra_runs": len(more), "full": sum(r.full for r in more)}
        return [*oracle, *more]

    def _battery(
        self,
        task: Task,
        shared: Any,
        resources: Resources,
        observe_run: ProbeRun,
        effect: Effect | None,
        by_probe: dict[str, list[ProbeRun]],
        probes: dict[str, object],
        step: StepTask | None = None,
    ) -> Generator[list[_Work], list[Any], list[AuditFinding]]:
        """The exploit battery over what the observe probe saw (`qaflow.audit.exploits`): run only when
        the oracle passed under observation and the verifier took task-owned inputs the agent can write.

        For a step of a multi-step task (`step`), planned on that step (its instruction and verifier) and
        played at it after the oracle's earlier steps (`<step>/exploit:<name>`), judged on the step's part
        of each run; `observe_run`, `effect` and `by_probe` are then the step's."""
        observation = observe_run.observation or Observation(why_not="no observation recorded")
        subject: Task = step or task
        prefix, at = (f"{step.step_name}/", step.step_name) if step is not None else ("", None)
        summary: dict[str, Any] = observation.brief()
        summary["oracle_full"] = observe_run.full
        note = harness_note(observation)
        if note:
            summary["harness"] = note
        probes["observe"] = summary
        findings = leftover_findings(observation) + git_findings(observation.git_leaks)
        if not observe_run.full:
            return findings
        folders = step.test_folders if step is not None else [task.tests_dir]
        sources = [text for folder in folders for text in verifier_texts(folder)]
        nop, where = by_probe.get("nop", []), str(task.path)
        evidence = Evidence(subject, observation, effect, sources, nop, where)
        planned = [(probe, probe.plan(evidence)) for probe in battery_probes()]
        # a hole of the harness (a root agent, the verifier's own user) is proven once per run, on the first
        # task whose verifier it fools, trying at most MAX_HARNESS_TRIES tasks
        harness = [
            e
            for e in harness_exploits(observation)
            if e.name not in self._harness_proven and self._harness_tries[e.name] < MAX_HARNESS_TRIES
        ]
        self._harness_tries.update(e.name for e in harness)
        tried = [*(e for _, exploits in planned for e in exploits), *harness]
        if not tried:
            return findings
        items = [(f"{prefix}exploit:{e.name}", 0, ProbeAgent.of_exploit(e, step=at), True) for e in tried]
        trial_runs = yield from self._trials(task, shared, resources, items)
        if step is not None:
            trial_runs = [step_view(run, step) for run in trial_runs]
        by_probe.update({run.probe: [run] for e, run in zip(tried, trial_runs, strict=True) if e not in harness})
        task_exploits = {
            e.name: {"reward": r.reward, "files": [p.path for p in e.plants]}
            for e, r in zip(tried, trial_runs, strict=True)
            if e not in harness
        }
        if task_exploits:
            summary["exploits"] = task_exploits
        ran = {e.name: r for e, r in zip(tried, trial_runs, strict=True)}
        for probe, exploits in planned:
            if exploits:
                findings += probe.judge(evidence, exploits, [ran[e.name] for e in exploits])
        if harness:
            proofs_of = summary.setdefault("harness", {}).setdefault("proofs", {})
            for e in harness:
                run = ran[e.name]
                network, offline = self.config.network.value, self.config.offline
                replay = run_command(f"exploit:{e.name}", where, backend=self._backend(task), offline=offline,
                                     network=network) if step is None else None  # fmt: skip
                proven = run.full and not (nop and all(r.full for r in nop))
                if proven:
                    self._harness_proven.add(e.name)
                proofs_of[e.name] = {
                    "proven": proven,
                    "reward": run.reward,
                    "files": [p.path for p in e.plants],
                    "replay": replay,
                }
        return findings

    def _build_finding(self, task: Task, build: dict[str, str]) -> AuditFinding:
        """`build_failed`, or `infra_error` when the backend cannot build it (unsupported) or the log
        shows the build failed for want of network (an offline run, or none to be had)."""
        log_tail = build.get("log_tail", "")
        backend = self._backend(task)
        message = f"environment/Dockerfile does not build on {backend}"
        stand_ins = json.loads(build.get("stand_ins") or "{}")
        if build.get("base_unavailable"):
            return AuditFinding(
                code=FindingCode.INFRA_ERROR,
                message=f"{message}: this machine lacks a base image: {build.get('error', '')[:300]}",
                evidence={"base_unavailable": build.get("error", ""), "backend": backend},
            )
        named = {"stand_ins": stand_ins} if stand_ins else {}
        if build.get("unsupported"):
            return AuditFinding(
                code=FindingCode.INFRA_ERROR,
                message=f"{message}: {build.get('error', '')[:300]}",
                evidence={"unsupported": build.get("error", ""), "log_tail": log_tail, "backend": backend} | named,
            )
        sign = classify(log_tail)
        # offline, a failed install is for want of network even where the log shows no resolver error
        if sign is not None and (sign.kind == "network" or (self.config.offline and sign.kind == "install_failed")):
            offline = " (an --offline run: builds have no network)" if self.config.offline else ""
            return AuditFinding(
                code=FindingCode.INFRA_ERROR,
                message=f"{message}{offline}: {sign.why}: {sign.match}",
                evidence={"line": sign.match, "log_tail": log_tail, "backend": backend} | named,
            )
        userland = stand_in_sign(log_tail) if stand_ins else None
        if userland is not None:
            used = ", ".join(f"{a} -> {b}" for a, b in stand_ins.items())
            return AuditFinding(
                code=FindingCode.INFRA_ERROR,
                message=f"{message} on a stand-in image ({used}), not the image the task names: "
                f"{userland.why}: {userland.match}",
                evidence={
                    "line": userland.match,
                    "stand_ins": stand_ins,
                    "log_tail": log_tail,
                    "backend": backend,
                },
            )
        return AuditFinding(
            code=FindingCode.BUILD_FAILED,
            message=f"{message}: {build.get('error', '')[:300]}",
            evidence={"log_tail": log_tail, "backend": backend} | named,
        )

    def _resources(self, task: Task) -> Resources:
        """What each of the task's items declares: the task's CPUs and memory, else the executor's default."""
        env, default = task.config.environment, self.executor.resources
        return Resources(cpus=env.cpus or default.cpus, memory_mb=env.memory_mb or default.memory_mb)

    def _build(self, task: Task, shared: Any, resources: Resources) -> Generator[list[_Work], list[Any], dict]:
        """Build once for all probes (always asked of the backend: a cached image makes it a no-op,
        and an image pruned since the last run is rebuilt). On a cluster every worker builds (or
        finds cached) the image on its own daemon; this item says whether it builds at all."""
        backend = self._backend(task)
        args = (shared, backend, self.run_id, *self._network_args())
        (outcome,) = yield [_Work(build_item, args, resources)]
        if isinstance(outcome, BaseException):
            raise outcome
        payload = outcome.payload
        status = ExitStatus.OK if payload["status"] == "ok" else ExitStatus.ERROR
        key = ResultKey(task_version=task.version, probe="build", attempt=0)
        known = self.ledger.get_result(key)
        if self.config.force or known is None or known.payload != payload or known.backend != backend:
            self._put(
                Result(
                    task_version=task.version,
                    probe="build",
                    attempt=0,
                    run_id=self.run_id,
                    backend=backend,
                    status=status,
                    payload=payload,
                    duration_s=outcome.duration_s,
                )
            )
        return payload

    def _trials(
        self, task: Task, shared: Any, resources: Resources, items: list[tuple[str, int, ProbeAgent, bool]]
    ) -> Generator[list[_Work], list[Any], list[ProbeRun]]:
        """The ProbeRuns of `items` (probe, attempt, agent, clear), in order: recorded ones from the
        ledger, the others run as work items (each recorded as it comes back). The first failed item
        is raised once all have come back, so that every finished trial is kept."""
        backend = self._backend(task)
        runs: list[ProbeRun | None] = [None] * len(items)
        works: list[_Work] = []
        where: list[int] = []
        for i, (probe, attempt, agent, clear) in enumerate(items):
            if not self.config.force:
                cached = self.ledger.get_result(ResultKey(task_version=task.version, probe=probe, attempt=attempt))
                if cached is not None and cached.backend == backend and self._same_network(cached.payload):
                    known = ProbeRun.model_validate(cached.payload)
                    outputs = f"{known.agent_output}\n{known.verifier_output}"
                    lost = known.effect is not None and effect_lost([known])
                    if not lost and (known.full or not sandbox_failed(known.error_kind, known.error or "", outputs)):
                        runs[i] = known
                        continue
            args = (shared, probe, attempt, agent, backend, self.run_id, clear, *self._network_args())
            works.append(_Work(trial_item, args, resources, record=lambda run: self._put_run(task, run)))
            where.append(i)
        outcomes = (yield works) if works else []
        failed = [o for o in outcomes if isinstance(o, BaseException)]
        if failed:
            raise failed[0]
        for i, run in zip(where, outcomes, strict=True):
            runs[i] = run
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

    def _network_args(self) -> tuple[bool, str]:
        return self.config.offline, self.config.network.value

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
                payload=run.model_dump(mode="json"),
                duration_s=run.duration_s,
            )
        )

    def _put(self, result: Result) -> None:
        self.ledger.put_result(result, force=True)

    def _record(self, task: Task, audit: TaskAudit) -> None:
        if self.ledger.get_version(task.version) is None:
            return
        findings = [
            Finding(task_version=task.version, run_id=self.run_id, code=f.code, severity=f.severity,
                    message=f.message, evidence=f.evidence)
            for f in audit.findings
        ]  # fmt: skip
        codes = sorted({f.code.value for f in audit.findings if f.severity is Severity.ERROR})
        self.ledger.record_audit(
            task.version,
            findings,
            clean=audit.verdict is Verdict.ACCEPTED,
            reason="audit: " + (", ".join(codes) or "clean"),
            run_id=self.run_id,
        )


_JUDGED_ON_THE_IMAGE = frozenset({FindingCode.FALSE_REJECTION, FindingCode.BROKEN_SOLUTION, FindingCode.FLAKY})


_OWNER_CHANGE_FAILED = re.compile(
    r"Cannot change ownership to uid \d+, gid \d+: Invalid argument"
    r"|chown: changing ownership of [^\\\n]*?: Invalid argument"
)


def _owner_changes_on_bwrap(findings: list[AuditFinding]) -> None:
    """A finding judged on bwrap whose runs show a change of a file's owner failing (bwrap maps root alone; a
    tar extracting as root keeps the archive's owners) is `infra_error`: docker would run it."""
    for i, finding in enumerate(findings):
        if finding.code not in _JUDGED_ON_THE_IMAGE:
            continue
        sign = _OWNER_CHANGE_FAILED.search(json.dumps(finding.evidence))
        if sign is None:
            continue
        why = f"judged on bwrap, which maps root alone, where changing a file's owner fails ({sign.group()})"
        findings[i] = _machine_not_task(finding, f"{why}; audit it on docker", {"line": sign.group()})


def _machine_not_task(finding: AuditFinding, why: str, evidence: dict[str, object]) -> AuditFinding:
    """`finding` as the `infra_error` it is: `why` it belongs to the machine, what it was, its evidence kept."""
    return finding.model_copy(
        update={
            "code": FindingCode.INFRA_ERROR,
            "message": f"{why}: {finding.message}",
            "evidence": {**finding.evidence, **evidence, "was": finding.code.value},
        }
    )


def _name_stand_ins(findings: list[AuditFinding], probes: dict[str, object]) -> None:
    """A finding that depends on the image's userland names the stand-in image it was judged on; where the
    stand-in's Python is not the version the image's name declares (`python:3.13` run on a 3.11 stand-in:
    `sum` of floats, for one, rounds otherwise), it is `infra_error`: the machine's verdict, not the task's."""
    build = probes.get("build")
    used = build.get("stand_ins") if isinstance(build, dict) else None
    if not used:
        return
    python = build.get("python") if isinstance(build, dict) else None
    other = isinstance(python, dict) and python.get("declared") != python.get("found")
    for i, finding in enumerate(findings):
        if finding.code not in _JUDGED_ON_THE_IMAGE:
            continue
        finding.evidence["stand_ins"] = used
        if other and isinstance(python, dict):
            why = (
                f"judged on a stand-in image whose Python is {python['found']}, not the {python['declared']} "
                f"the task's image names ({', '.join(f'{a} -> {b}' for a, b in used.items())}), so this "
                f"{finding.code.value} may be the stand-in's"
            )
            findings[i] = _machine_not_task(finding, why, {"python": python})


def _rel(path: Path, folder: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(folder.resolve()))
    except ValueError:
        return str(path)


def binomial_note(repeats: int) -> str:
    miss = 2 * 0.5**repeats
    return f"{repeats} runs each of nop and oracle catch a 50% coin-flip verifier with probability {1 - miss:.1%}"
