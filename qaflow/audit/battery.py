"""The exploit battery as probes registered by name: each plans exploit trials from the evidence so far
(what the observe probe saw, the oracle's effect, the task's instruction and verifier) and judges the
runs of what it planned. The audit runs every registered probe where the oracle passed under
observation (`Auditor._battery`), one trial per planned exploit, named `exploit:<name>`.

Registered here, in this order (the order their findings are listed): `answer-copy`, `decode-copy`,
`hidden-link`, `always-equal`, `clock`, `data-forge`, `trust-boundary` (the planted inputs of
`exploits.plan_exploits`, `expected-rewrite` and `exit-at-import`, judged together), `replay` (record
and replay from the traced verifier, `qaflow.audit.exploits.replay_plants`). A probe with `kitchen_sink = True`
(and a `control(evidence, exploit)`: its wrong state alone) is played after the others, only where none
proved `reward_tamper` or `leak` and the nop fails; each of its exploits that gets full reward is cut down by the
battery to the smallest set of plant groups that still does (`qaflow.audit.exploits.minimise`), its control run
beside the first round, before it is judged. A probe of one's
own is registered with `register_probe`; the harness holes (`exploits.harness_exploits`) are proven
once per run and stay with the auditor.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Protocol, TypeGuard

from qaflow.audit.exploits import Exploit, plan_exploits
from qaflow.audit.exploits.answers import judge_answer_copy, plan_answer_copy
from qaflow.audit.exploits.data_forge import judge_data_forge, plan_data_forge
from qaflow.audit.exploits.decodes import judge_decode_copy, plan_decode_copy
from qaflow.audit.exploits.expected import plan_expected_rewrite
from qaflow.audit.exploits.hidden_links import judge_hidden_link, plan_hidden_link
from qaflow.audit.exploits.inprocess import (
    ALWAYS_EQUAL,
    EXIT_AT_IMPORT,
    judge_always_equal,
    judge_clock,
    plan_clock,
    plan_in_process,
)
from qaflow.audit.exploits.replay_plants import WORK_GROUP, WRONG_STATE, plan_replay
from qaflow.audit.judge import judge_exploits
from qaflow.audit.observation import Observation
from qaflow.audit.probe_run import ProbeRun
from qaflow.models.audit import AuditFinding
from qaflow.task import Task
from qaflow.text import folder_texts, utf8_text
from qaflow.trial.effects import ChangeKind, Effect


@dataclass(frozen=True)
class Evidence:
    """What the battery's probes plan and judge from."""

    task: Task
    """The task, or the step of a multi-step task, the exploits are played at."""
    observation: Observation
    effect: Effect | None
    """The oracle's recorded effect (at the step)."""
    sources: list[str]
    """The text of the verifier's files."""
    nop: list[ProbeRun] = field(default_factory=list)
    """The nop runs (at the step): an exploit that passes where the nop passes too proves nothing."""
    where: str = ""
    """The task's folder, as findings name it."""

    @cached_property
    def in_process(self) -> list[Exploit]:
        """`inprocess.plan_in_process`, once for the probes that use it (always-equal, exit-at-import)."""
        return plan_in_process(self.observation, self.effect, self.sources)


class BatteryProbe(Protocol):
    """A probe of the battery: `plan` the exploits to run (one trial each), `judge` their runs (in plan order)."""

    @property
    def name(self) -> str: ...

    def plan(self, evidence: Evidence) -> list[Exploit]: ...

    def judge(
        self, evidence: Evidence, exploits: Sequence[Exploit], runs: Sequence[ProbeRun]
    ) -> list[AuditFinding]: ...


class SinkProbe(BatteryProbe, Protocol):
    """A kitchen sink: planned and played after the other probes (`kitchen_sink` is True), its hits minimised
    beside `control(evidence, exploit)`, the exploit's wrong state alone."""

    kitchen_sink: bool

    def control(self, evidence: Evidence, exploit: Exploit) -> Exploit | None: ...


def is_sink(probe: BatteryProbe) -> TypeGuard[SinkProbe]:
    return bool(getattr(probe, "kitchen_sink", False))


_REGISTRY: dict[str, BatteryProbe] = {}


def register_probe(probe: BatteryProbe) -> BatteryProbe:
    """Add `probe` to the battery (after those registered before it).

    Raises:
        ValueError: a probe of that name is registered already.
    """
    if probe.name in _REGISTRY:
        raise ValueError(f"a battery probe named {probe.name!r} is registered already")
    _REGISTRY[probe.name] = probe
    return probe


def unregister_probe(name: str) -> None:
    """Remove the probe `name` from the battery, if it is there."""
    _REGISTRY.pop(name, None)


def battery_probes() -> list[BatteryProbe]:
    """The registered probes, in registration order."""
    return list(_REGISTRY.values())


SingleJudge = Callable[[Sequence[ProbeRun], ProbeRun, Exploit, str], list[AuditFinding]]


@dataclass(frozen=True)
class SingleExploitProbe:
    """A probe that plans at most one exploit and judges its one run against the nop."""

    name: str
    planner: Callable[[Evidence], Exploit | None]
    judge_one: SingleJudge

    def plan(self, evidence: Evidence) -> list[Exploit]:
        exploit = self.planner(evidence)
        return [] if exploit is None else [exploit]

    def judge(self, evidence: Evidence, exploits: Sequence[Exploit], runs: Sequence[ProbeRun]) -> list[AuditFinding]:
        return [
            f
            for e, run in zip(exploits, runs, strict=True)
            for f in self.judge_one(evidence.nop, run, e, evidence.where)
        ]


def _in_process(evidence: Evidence, name: str) -> Exploit | None:
    return next((e for e in evidence.in_process if e.name == name), None)


class ClockProbe:
    """A verifier that times the solution: a control run and one with the clock patched (`inprocess.plan_clock`)."""

    name = "clock"

    def plan(self, evidence: Evidence) -> list[Exploit]:
        pair = plan_clock(evidence.observation, evidence.effect, evidence.sources)
        return [] if pair is None else list(pair)

    def judge(self, evidence: Evidence, exploits: Sequence[Exploit], runs: Sequence[ProbeRun]) -> list[AuditFinding]:
        control, patched = runs
        return judge_clock(evidence.nop, control, patched, exploits[1], evidence.where)


class DataForgeProbe:
    """Forged data beside a control, in pairs (`data_forge.plan_data_forge`)."""

    name = "data-forge"

    def plan(self, evidence: Evidence) -> list[Exploit]:
        pairs = plan_data_forge(evidence.observation, evidence.effect, evidence.task.instruction)
        return [e for pair in pairs for e in pair]

    def judge(self, evidence: Evidence, exploits: Sequence[Exploit], runs: Sequence[ProbeRun]) -> list[AuditFinding]:
        results = [(exploits[i], runs[i], runs[i + 1]) for i in range(0, len(exploits), 2)]
        return judge_data_forge(evidence.nop, results, evidence.where)


class TrustBoundaryProbe:
    """What the verifier took from task-owned inputs the agent can write, planted (`exploits.plan_exploits`),
    the expected output rewritten (`expected.plan_expected_rewrite`) and an exit at import."""

    name = "trust-boundary"

    def plan(self, evidence: Evidence) -> list[Exploit]:
        effect = evidence.effect
        changed = {c.path for c in effect.changes} if effect is not None and effect.ok else None
        exploits = plan_exploits(evidence.observation, changed)
        rewrite = plan_expected_rewrite(evidence.observation, effect, evidence.task.instruction)
        exit_at_import = _in_process(evidence, EXIT_AT_IMPORT)
        return [*exploits, *(e for e in (rewrite, exit_at_import) if e is not None)]

    def judge(self, evidence: Evidence, exploits: Sequence[Exploit], runs: Sequence[ProbeRun]) -> list[AuditFinding]:
        return judge_exploits(evidence.nop, runs, exploits, evidence.where)


def agent_visible_text(task: Task) -> str:
    """What the agent can read of the task before it works: the instruction and the environment's files."""
    return "\n".join([task.instruction, *(text for _, text in folder_texts(task.environment_dir))])


PICKLE_PROTO = b"\x80"
"""The first byte of a pickle of protocol 2 or later (the `PROTO` opcode)."""


class ReplayProbe:
    """Record and replay (`replay_plants.plan_replay`): a kitchen sink of every plant derived from the traced
    verifier, on a wrong state. The battery plays it only where no other probe proved a forged reward or a
    leaked answer and the nop fails, and a sink that gets full reward is minimised (`minimise.ddmin`) beside
    its `control` (the wrong state alone): a control that passes too is no finding."""

    name = "replay"
    kitchen_sink = True

    def plan(self, evidence: Evidence) -> list[Exploit]:
        effect = evidence.effect
        if effect is None or not effect.ok:
            return []  # without the oracle's work known, its own files could be replayed as plants
        files = [c.path for c in effect.changes if c.kind != ChangeKind.DELETED and c.file_type == "file"]
        pickles = [c.path for c in effect.changes if c.path in files and (c.content or b"")[:1] == PICKLE_PROTO]
        texts = {
            c.path: t for c in effect.changes if c.path in files and (t := utf8_text(c.content or b"")) is not None
        }
        visible = agent_visible_text(evidence.task)
        return plan_replay(evidence.observation, {c.path for c in effect.changes}, files, pickles, texts, visible)

    def control(self, evidence: Evidence, exploit: Exploit) -> Exploit:
        return Exploit(name=WRONG_STATE, plants=[p for p in exploit.plants if p.group == WORK_GROUP])

    def judge(self, evidence: Evidence, exploits: Sequence[Exploit], runs: Sequence[ProbeRun]) -> list[AuditFinding]:
        won = [(e, r) for e, r in zip(exploits, runs, strict=True) if any(p.group != WORK_GROUP for p in e.plants)]
        return judge_exploits(evidence.nop, [r for _, r in won], [e for e, _ in won], evidence.where)


BUILT_IN: tuple[BatteryProbe, ...] = (
    SingleExploitProbe(
        "answer-copy", lambda ev: plan_answer_copy(ev.observation, ev.effect, ev.task.instruction), judge_answer_copy
    ),
    SingleExploitProbe(
        "decode-copy", lambda ev: plan_decode_copy(ev.observation, ev.effect, ev.task.instruction), judge_decode_copy
    ),
    SingleExploitProbe("hidden-link", lambda ev: plan_hidden_link(ev.task, ev.effect), judge_hidden_link),
    SingleExploitProbe("always-equal", lambda ev: _in_process(ev, ALWAYS_EQUAL), judge_always_equal),
    ClockProbe(),
    DataForgeProbe(),
    TrustBoundaryProbe(),
    ReplayProbe(),
)
for _probe in BUILT_IN:
    register_probe(_probe)
