"""The audit plan of a task, fed canned probe runs: which trials it asks for in each round, and what it judges
from their runs (a single-step task's `single_step_probe`; a multi-step task's `audit_steps`).

No sandbox runs here. The task's `trials` is a double that records every list of `TrialRequest`s a probe
asks for and answers each request at once (it yields no work item) with a canned `ProbeRun` from the test's
table (`Canned`); the test drives the probe generator itself and fails on any work item the probe yields
directly (build or differential items: the tasks here have no Python module for code mutants and no
disabled tests)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import pytest

from qaflow.audit.battery import Evidence, register_probe, unregister_probe
from qaflow.audit.config import AuditConfig
from qaflow.audit.exploits import Exploit, Plant
from qaflow.audit.observation import Observation
from qaflow.audit.probe_run import ProbeRun
from qaflow.audit.probes.context import Probe, TaskRun, Work
from qaflow.audit.probes.exploit_battery import HarnessTries
from qaflow.audit.probes.multi_step import audit_steps
from qaflow.audit.probes.single_step import single_step_probe
from qaflow.audit.work_items import RunContext, TrialRequest
from qaflow.executors import Resources
from qaflow.models.audit import AuditFinding
from qaflow.models.records import FindingCode
from qaflow.task import Task
from qaflow.task_steps import StepTask
from qaflow.trial.effects import ChangeKind, Effect, FileChange
from tests.stepfactory import write_stock_task
from tests.taskfactory import write_task

T = TypeVar("T")

OUT = "/app/out.txt"
EFFECT = Effect(
    changes=[FileChange(path=OUT, kind=ChangeKind.CREATED, content=b"done\n", mode=0o644, size=5)],
    workdir="/app",
    roots=["/app"],
    method="find",
)
"""What the reference solution of `write_task`'s task does: `echo done > /app/out.txt`."""
MUTANTS = ["mutant:empty-all", "mutant:corrupt-line:app/out.txt", "mutant:truncate:app/out.txt"]
"""The mutants of `EFFECT`, most informative first (every one a deliverable: the instruction names the file)."""


@dataclass(frozen=True)
class Outcome:
    """A canned trial's outcome: full reward or none, its verifier reruns (None: as many as the request asks,
    each the same as the trial) and how it ended."""

    full: bool
    reruns: tuple[bool, ...] | None = None
    exit_status: str = "ok"


PASS, FAIL = Outcome(True), Outcome(False)


@dataclass(frozen=True)
class Canned:
    """The table a test gives: the outcome of each probe's trials (nop and oracle by attempt, `default` for
    attempts not listed), the observed run and what it saw, and the mutants and exploits that pass."""

    nop: dict[int, Outcome] = field(default_factory=dict)
    oracle: dict[int, Outcome] = field(default_factory=dict)
    nop_default: Outcome = FAIL
    oracle_default: Outcome = PASS
    observe: Outcome = PASS
    outputs: dict[str, str] | None = None
    """The observed run's digests of the first oracle run's outputs (None: the same as `EFFECT`'s)."""
    tamper: Outcome = FAIL
    passing: frozenset[str] = frozenset()
    """Probe keys of mutants and exploits that get full reward."""
    reward_source: str = "reward.txt"

    def answer(self, request: TrialRequest) -> ProbeRun:
        kind, attempt = request.agent.kind, request.attempt
        if kind == "nop":
            outcome = self.nop.get(attempt, self.nop_default)
        elif kind == "oracle":
            outcome = self.oracle.get(attempt, self.oracle_default)
        elif kind == "observe":
            outcome = self.observe
        elif kind == "tamper":
            outcome = self.tamper
        else:
            outcome = Outcome(request.probe in self.passing)
        reruns = list(outcome.reruns if outcome.reruns is not None else [outcome.full] * request.agent.reruns)
        run = ProbeRun(
            probe=request.probe,
            attempt=attempt,
            reward=1.0 if outcome.full else 0.0,
            reward_source=self.reward_source,
            full=outcome.full,
            exit_status=outcome.exit_status,
            agent_exit=None if outcome.exit_status == "agent_timeout" else 0,
            agent_timed_out=outcome.exit_status == "agent_timeout",
            verifier_exit=0,
            verifier_timed_out=outcome.exit_status == "verifier_timeout",
            duration_s=2.0,
            reruns=reruns,
        )
        if request.agent.record:
            run.effect = EFFECT
        if kind == "observe":
            outputs = EFFECT.output_digests() if self.outputs is None else self.outputs
            run.observation = Observation(observed=True, reruns=reruns, output_digests=outputs)
        return run


@dataclass(frozen=True)
class Asked:
    """One trial a probe asked for, as the ledger and the trial see it."""

    probe: str
    attempt: int
    kind: str
    reruns: int = 0
    clear_logs: bool = True
    record: bool = False

    @property
    def key(self) -> str:
        return f"{self.probe}#{self.attempt}"


class CannedTrials:
    """`TaskRun.trials`: records each round of requests and answers each request with `answer`'s canned run,
    without a work item."""

    def __init__(self, answer: Callable[[TrialRequest], ProbeRun]):
        self.answer = answer
        self.requests: list[list[TrialRequest]] = []

    def __call__(
        self, requests: list[TrialRequest], *, shared: Any | None = None
    ) -> Generator[list[Work], list[Any], list[ProbeRun]]:
        self.requests.append(list(requests))
        yield from ()
        return [self.answer(r) for r in requests]

    @property
    def rounds(self) -> list[list[Asked]]:
        return [[_asked(r) for r in round_] for round_ in self.requests]

    def keys(self) -> list[list[str]]:
        """Each round's trials as `probe#attempt`."""
        return [[a.key for a in round_] for round_ in self.rounds]


def _asked(request: TrialRequest) -> Asked:
    agent = request.agent
    return Asked(request.probe, request.attempt, agent.kind, agent.reruns, request.clear_logs, agent.record)


def drive(probe: Probe[T]) -> T:
    """Run `probe` to its end; a work item it yields itself (not through `trials`) fails the test."""
    try:
        works = next(probe)
    except StopIteration as stop:
        return stop.value
    raise AssertionError(f"the probe yielded work items of its own: {[w.fn.__name__ for w in works]}")


@dataclass
class Audited:
    findings: list[AuditFinding]
    probes: dict[str, object]
    trials: CannedTrials

    @property
    def codes(self) -> list[str]:
        return sorted({f.code.value for f in self.findings})


def audit(task: Task, config: AuditConfig, canned: Canned) -> Audited:
    trials = CannedTrials(canned.answer)
    context = RunContext(backend="bwrap", run_id="plans")
    run = TaskRun(task, task, Resources(), context, config, trials, lambda t: t)
    probes: dict[str, object] = {}
    findings = drive(single_step_probe(run, HarnessTries(), probes))
    return Audited(findings, probes, trials)


def config(**settings: Any) -> AuditConfig:
    """The run's settings: observed and adaptive unless told, 3 repeats, 8 verifier reruns, 2 mutants."""
    base: dict[str, Any] = {"repeats": 3, "verifier_reruns": 8, "max_mutants": 2, "offline": True}
    return AuditConfig(**(base | settings))


@pytest.fixture
def task(tmp_path: Path) -> Task:
    return Task.load(write_task(tmp_path))


# -- the first round: nop and oracle ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("settings", "separate", "expected"),
    [
        pytest.param(
            {},
            False,
            [Asked("nop", 0, "nop", reruns=2), Asked("oracle", 0, "oracle", record=True)],
            id="adaptive: one trial each, the nop's reruns make up its repeats",
        ),
        pytest.param(
            {"repeats": 5},
            False,
            [Asked("nop", 0, "nop", reruns=4), Asked("oracle", 0, "oracle", record=True)],
            id="adaptive, 5 repeats",
        ),
        pytest.param(
            {"exhaustive": True},
            False,
            [Asked("nop", i, "nop") for i in range(3)]
            + [Asked("oracle", 0, "oracle", record=True), Asked("oracle", 1, "oracle"), Asked("oracle", 2, "oracle")],
            id="exhaustive: repeats trials each, no reruns, the first oracle trial records its effect",
        ),
        pytest.param(
            {"observe": False},
            False,
            [Asked("nop", i, "nop") for i in range(3)]
            + [Asked("oracle", 0, "oracle", record=True), Asked("oracle", 1, "oracle"), Asked("oracle", 2, "oracle")],
            id="not observing: the fixed plan",
        ),
        pytest.param(
            {},
            True,
            [Asked("nop", i, "nop") for i in range(3)]
            + [Asked("oracle", 0, "oracle", record=True), Asked("oracle", 1, "oracle"), Asked("oracle", 2, "oracle")],
            id="separate verifier environment: the fixed plan",
        ),
    ],
)
def test_the_first_round_is_nop_and_oracle(
    settings: dict[str, Any], separate: bool, expected: list[Asked], task: Task, tmp_path: Path
):
    if separate:  # tests/Dockerfile: the verifier runs in an environment of its own
        task = Task.load(write_task(tmp_path, "separate", files={"tests/Dockerfile": "FROM python:3.11-slim\n"}))
        assert task.verifier_mode.value == "separate"
    done = audit(task, config(**settings), Canned())
    assert done.trials.rounds[0] == expected


# -- the second round: after the oracle ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("settings", "canned", "second", "later"),
    [
        pytest.param(
            {},
            Canned(),
            [Asked("tamper", 0, "tamper", clear_logs=False), Asked("observe", 0, "observe", reruns=8)],
            [MUTANTS[:2]],
            id="observed: tamper and observe, then the mutants",
        ),
        pytest.param(
            {"verifier_reruns": 2},
            Canned(),
            [Asked("tamper", 0, "tamper", clear_logs=False), Asked("observe", 0, "observe", reruns=5)],
            [MUTANTS[:2]],
            id="adaptive: the observed run's reruns make up 2 x repeats + 1 oracle outcomes",
        ),
        pytest.param(
            {"exhaustive": True, "verifier_reruns": 2},
            Canned(),
            [Asked("tamper", 0, "tamper", clear_logs=False), Asked("observe", 0, "observe", reruns=2)],
            [MUTANTS[:2]],
            id="exhaustive: the configured reruns",
        ),
        pytest.param(
            {"max_mutants": 12},
            Canned(),
            [Asked("tamper", 0, "tamper", clear_logs=False), Asked("observe", 0, "observe", reruns=8)],
            [MUTANTS],
            id="every mutant up to the cap",
        ),
        pytest.param(
            {"max_mutants": 1},
            Canned(),
            [Asked("tamper", 0, "tamper", clear_logs=False), Asked("observe", 0, "observe", reruns=8)],
            [MUTANTS[:1]],
            id="the cap of one",
        ),
        pytest.param(
            {"max_mutants": 0},
            Canned(),
            [Asked("tamper", 0, "tamper", clear_logs=False), Asked("observe", 0, "observe", reruns=8)],
            [],
            id="no mutants with a cap of 0",
        ),
        pytest.param(
            {"exhaustive": True},
            Canned(oracle={1: FAIL}),
            [Asked("tamper", 0, "tamper", clear_logs=False), Asked("observe", 0, "observe", reruns=8)],
            [],
            id="no mutants when an oracle trial missed full reward",
        ),
        pytest.param(
            {"observe": False},
            Canned(),
            [Asked("tamper", 0, "tamper", clear_logs=False)] + [Asked(m, 0, "mutant") for m in MUTANTS[:2]],
            [],
            id="not observing: the mutants beside the tamper probe",
        ),
        pytest.param(
            {"observe": False},
            Canned(oracle={2: FAIL}),
            [Asked("tamper", 0, "tamper", clear_logs=False)],
            [],
            id="not observing, an oracle trial failed: the tamper probe alone",
        ),
    ],
)
def test_the_rounds_after_the_oracle(
    settings: dict[str, Any], canned: Canned, second: list[Asked], later: list[list[str]], task: Task
):
    """`later`: the probes of the rounds after the second (each a mutant's trial, attempt 0)."""
    rounds = audit(task, config(**settings), canned).trials.rounds
    assert rounds[1] == second
    assert rounds[2:] == [[Asked(m, 0, "mutant") for m in round_] for round_ in later]


def test_the_tamper_plants_the_oracles_reward_file_and_the_observed_run_compares_its_outputs(task: Task):
    trials = audit(task, config(), Canned(reward_source="reward.json")).trials
    tamper, observe = trials.requests[1]
    assert tamper.agent.files == ["reward.json"]
    assert observe.agent.outputs == {OUT: hashlib.sha256(b"done\n").hexdigest()}


# -- settling: where one trial each leaves a side unclear ---------------------------------------------


@pytest.mark.parametrize(
    ("canned", "settle"),
    [
        pytest.param(Canned(), None, id="settled: no more trials"),
        pytest.param(Canned(nop={0: Outcome(False, (False, True))}), ["nop#1", "nop#2"], id="nop reruns disagree"),
        pytest.param(Canned(nop={0: Outcome(False, (False,))}), ["nop#1"], id="nop reruns ran short by one"),
        pytest.param(Canned(nop={0: Outcome(False, ())}), ["nop#1", "nop#2"], id="nop reruns ran short by two"),
        pytest.param(
            Canned(nop={0: Outcome(False, (), "agent_timeout")}), ["nop#1"], id="a timed-out side: two runs settle it"
        ),
        pytest.param(
            Canned(oracle={0: Outcome(False, (), "verifier_timeout")}),
            ["oracle#1", "oracle#2"],
            id="an oracle trial ended uncleanly",
        ),
        pytest.param(Canned(observe=Outcome(True, (True,) * 4)), ["oracle#1", "oracle#2"], id="oracle outcomes 6 of 7"),
        pytest.param(Canned(observe=Outcome(True, (True,) * 5)), None, id="oracle outcomes 7 of 7"),
        pytest.param(
            Canned(outputs={OUT: "0" * 64}), ["oracle#1", "oracle#2"], id="the reference solution's outputs varied"
        ),
        pytest.param(
            Canned(nop={0: Outcome(False, (True, False))}, observe=Outcome(True, (True, True))),
            ["nop#1", "nop#2", "oracle#1", "oracle#2"],
            id="both sides unclear",
        ),
    ],
)
def test_settling_adds_the_trials_the_stopping_rule_asks_for(canned: Canned, settle: list[str] | None, task: Task):
    done = audit(task, config(max_mutants=0), canned)
    rounds = done.trials.rounds
    assert [[a.kind for a in r] for r in rounds[:2]] == [["nop", "oracle"], ["tamper", "observe"]]
    assert done.probes["evidence"]["escalated"] is (settle is not None)  # type: ignore[index]
    if settle is None:
        assert len(rounds) == 2
    else:
        assert done.trials.keys()[2:] == [settle]
        assert all(a.reruns == 0 and not a.record for a in rounds[2])


def test_settling_is_only_for_the_adaptive_plan(task: Task):
    canned = Canned(nop={0: Outcome(False, (False, True))}, outputs={OUT: "0" * 64})
    done = audit(task, config(max_mutants=0, exhaustive=True), canned)
    assert [[a.kind for a in r] for r in done.trials.rounds] == [["nop"] * 3 + ["oracle"] * 3, ["tamper", "observe"]]
    assert "evidence" not in done.probes


# -- confirmation: the verifier's reruns disagree with oracle runs that agree -------------------------


@pytest.mark.parametrize(
    ("repeats", "observe_reruns", "confirm_fails", "rounds"),
    [
        pytest.param(3, (True,) * 8, None, [], id="reruns agree: none"),
        pytest.param(3, (True,) * 7 + (False,), None, [range(1, 9), range(9, 17)], id="mixed reruns: two rounds"),
        pytest.param(5, (True,) * 8 + (False,), None, [range(1, 11), range(11, 21)], id="2 x repeats when over 8"),
        pytest.param(3, (False,) * 8, None, [range(1, 9)], id="reruns all fail: one round"),
        pytest.param(3, (True,) * 7 + (False,), 4, [range(1, 9)], id="a round that disagrees ends it"),
    ],
)
def test_confirming_oracle_rounds(
    repeats: int, observe_reruns: tuple[bool, ...], confirm_fails: int | None, rounds: list[range], task: Task
):
    oracle = {} if confirm_fails is None else {confirm_fails: FAIL}
    done = audit(
        task, config(repeats=repeats, max_mutants=0), Canned(oracle=oracle, observe=Outcome(True, observe_reruns))
    )
    assert done.trials.keys()[2:] == [[f"oracle#{i}" for i in r] for r in rounds]
    assert done.probes["verifier_reruns"] == {"runs": len(observe_reruns), "full": sum(observe_reruns)}
    assert ("flaky" in done.codes) is (confirm_fails is not None)


# -- the exploit battery ------------------------------------------------------------------------------


class ForgedReward:
    """A battery probe of the test's own: one exploit, a proven `reward_tamper` when it gets full reward."""

    name = "plans-forged-reward"

    def plan(self, evidence: Evidence) -> list[Exploit]:
        return [Exploit(name=self.name, plants=[Plant(path="/logs/verifier/reward.txt", content="1\n", why="test")])]

    def judge(self, evidence: Evidence, exploits: Sequence[Exploit], runs: Sequence[ProbeRun]) -> list[AuditFinding]:
        return [AuditFinding(code=FindingCode.REWARD_TAMPER, message="forged") for r in runs if r.full]


class Sink:
    """A kitchen sink of the test's own (its one exploit never passes here, so nothing is minimised)."""

    name = "plans-sink"
    kitchen_sink = True

    def plan(self, evidence: Evidence) -> list[Exploit]:
        return [Exploit(name=self.name, plants=[Plant(path="/app/x", content="x", why="test")])]

    def control(self, evidence: Evidence, exploit: Exploit) -> Exploit | None:
        return None

    def judge(self, evidence: Evidence, exploits: Sequence[Exploit], runs: Sequence[ProbeRun]) -> list[AuditFinding]:
        return []


@pytest.fixture
def battery() -> Generator[None, None, None]:
    register_probe(ForgedReward())
    register_probe(Sink())
    yield
    unregister_probe(Sink.name)
    unregister_probe(ForgedReward.name)


FORGED, SINK = f"exploit:{ForgedReward.name}", f"exploit:{Sink.name}"


@pytest.mark.usefixtures("battery")
@pytest.mark.parametrize(
    ("canned", "played", "codes"),
    [
        pytest.param(Canned(), [[FORGED], [SINK]], [], id="the oracle passed observed: the probes, then the sink"),
        pytest.param(Canned(observe=Outcome(False, (True,) * 8)), [], [], id="the observed oracle failed: none"),
        pytest.param(
            Canned(passing=frozenset({FORGED})), [[FORGED]], ["reward_tamper"], id="a proven reward_tamper: no sink"
        ),
        pytest.param(Canned(nop_default=PASS), [[FORGED]], ["false_pass"], id="the nop passes: no sink"),
    ],
)
def test_the_battery_runs_on_an_observed_pass_and_the_sink_only_where_nothing_is_proven(
    canned: Canned, played: list[list[str]], codes: list[str], task: Task
):
    done = audit(task, config(max_mutants=0), canned)
    rounds = done.trials.keys()
    assert [[a.kind for a in r] for r in done.trials.rounds[:2]] == [["nop", "oracle"], ["tamper", "observe"]]
    assert rounds[2:] == [[f"{probe}#0" for probe in r] for r in played]
    assert done.codes == codes
    assert done.probes["observe"]["oracle_full"] is canned.observe.full  # type: ignore[index]


# -- the judge on the canned runs ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("settings", "canned", "codes"),
    [
        pytest.param({}, Canned(), [], id="a sound task: no finding"),
        pytest.param({}, Canned(nop_default=PASS), ["false_pass"], id="the nop passes"),
        pytest.param({}, Canned(passing=frozenset({MUTANTS[1]})), ["weak_verifier"], id="a mutant passes"),
        pytest.param({}, Canned(tamper=PASS), ["reward_tamper"], id="the planted reward stands"),
        pytest.param({"observe": False}, Canned(passing=frozenset({MUTANTS[0]})), ["weak_verifier"], id="not observed"),
        pytest.param(
            {"exhaustive": True}, Canned(oracle_default=FAIL, observe=FAIL), ["false_rejection"], id="oracle rejected"
        ),
        pytest.param({"exhaustive": True}, Canned(oracle={2: FAIL}), ["flaky"], id="one oracle trial of 3 fails"),
    ],
)
def test_the_judge_on_the_canned_runs(settings: dict[str, Any], canned: Canned, codes: list[str], task: Task):
    done = audit(task, config(**settings), canned)
    assert done.codes == codes
    mutants = [a.probe for r in done.trials.rounds for a in r if a.kind == "mutant"]
    assert done.probes["mutant_rewards"] == {
        m.removeprefix("mutant:"): (1.0 if m in canned.passing else 0.0) for m in mutants
    }


# -- a multi-step task: the same plan at each step ----------------------------------------------------

STEPS = ["counter", "restock", "total"]
STEP_OUTPUTS = {"counter": "/app/counter.sh", "restock": "/app/restock.txt", "total": "/app/total.txt"}


def _step_effect(step: str) -> Effect:
    path = STEP_OUTPUTS[step]
    change = FileChange(path=path, kind=ChangeKind.CREATED, content=b"two lines\nof output\n", mode=0o644, size=20)
    return Effect(changes=[change], workdir="/app", roots=["/app"], method="find")


@dataclass(frozen=True)
class CannedSteps:
    """A multi-step task's canned runs: the oracle passes every step but those `oracle_fails` names (attempt ->
    step, where the run ends), the nop of every step fails, each run has a view per step it reached."""

    oracle_fails: dict[int, str] = field(default_factory=dict)

    def answer(self, request: TrialRequest) -> ProbeRun:
        agent, attempt = request.agent, request.attempt
        last = STEPS.index(agent.step) if agent.step is not None else len(STEPS) - 1
        failed_at = self.oracle_fails.get(attempt) if agent.kind == "oracle" else None
        views = []
        for name in STEPS[: last + 1]:
            full = name != failed_at and (name != agent.step or agent.kind == "observe")
            views.append(
                ProbeRun(probe=f"{name}/{agent.kind}", step=name, attempt=attempt, reward=float(full), full=full)
            )
            if name == failed_at:
                break
        run = ProbeRun(probe=request.probe, attempt=attempt, steps=views, full=all(v.full for v in views))
        if agent.record:
            run.effects = {name: _step_effect(name) for name in STEPS}
        return run


@dataclass
class BatteryCalls:
    """The battery as `audit_steps` calls it: records the step and the observed run's view, finds nothing."""

    seen: list[tuple[str | None, str, bool]] = field(default_factory=list)

    def __call__(
        self,
        observe_run: ProbeRun,
        effect: Effect | None,
        by_probe: dict[str, list[ProbeRun]],
        probes: dict[str, object],
        step: StepTask | None = None,
    ) -> Probe[list[AuditFinding]]:
        self.seen.append((step.step_name if step else None, observe_run.probe, observe_run.full))
        yield from ()
        return []


@pytest.mark.parametrize(
    ("oracle_fails", "sound"),
    [
        pytest.param({}, STEPS, id="the oracle passes every step"),
        pytest.param({1: "restock"}, ["counter"], id="an oracle run stops at restock: no later step is sound"),
        pytest.param({0: "counter"}, [], id="the first step failed once: none is"),
    ],
)
def test_a_multi_step_task_is_planned_per_step(oracle_fails: dict[int, str], sound: list[str], tmp_path: Path):
    task = Task.load(write_stock_task(tmp_path))
    trials, battery = CannedTrials(CannedSteps(oracle_fails).answer), BatteryCalls()
    drive(audit_steps(task, trials, repeats=2, max_mutants=1, battery=battery))
    first, second = trials.rounds
    assert first == [Asked("oracle", 0, "oracle", record=True), Asked("oracle", 1, "oracle")] + [
        Asked(f"{name}/nop", i, "nop") for name in STEPS for i in range(2)
    ]
    expected = []
    for name in STEPS:
        expected.append(Asked(f"{name}/tamper", 0, "tamper", clear_logs=False))
        if name in sound:
            expected += [Asked(f"{name}/mutant:empty-all", 0, "mutant"), Asked(f"{name}/observe", 0, "observe")]
    assert second == expected
    assert battery.seen == [(name, "observe", True) for name in sound]
