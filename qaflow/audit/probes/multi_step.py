"""The audit of a multi-step task: every step probed on the state the earlier steps leave.

- oracle: N trials of the whole task (the first records each step's effect). Each step's part of
  them is judged as a single-step task's oracle runs are (`broken_solution`, `false_rejection`,
  `flaky`); a step whose workdir/setup.sh or healthcheck fails in every run is `build_failed`.
- nop of step k (`<k>/nop`, N times): the oracle at the steps before k, nothing at k, then k's
  verifier; the trial ends there. Full reward every time is `false_pass` for k.
- tamper of step k (`<k>/tamper`): the tamper probe, played at k after the oracle's earlier steps.
- mutants of step k (`<k>/mutant:<name>`, up to `max_mutants` per step): derived from the oracle's
  effect at k and played at k after the oracle's earlier steps: `weak_verifier` for k.
- observe of step k (`<k>/observe`), where the oracle passed k in every run: the oracle's steps up to k,
  k's verifier observed (`qaflow.audit.observe`); then k's exploit battery over what it saw
  (`<k>/exploit:<name>`, played at k after the oracle's earlier steps), as for a single-step task.

Each finding names its step in the message and in `evidence["step"]`. A step no oracle run reached
(an earlier one failed or missed its `min_reward`) is not judged: the earlier step's finding says why.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, Protocol

from qaflow.audit.judge import SETUP_FAILED, judge
from qaflow.audit.mutants import Mutant, make_mutants
from qaflow.audit.probe_agent import ProbeAgent
from qaflow.audit.probe_run import ProbeRun
from qaflow.audit.probes.context import Probe, TrialRequest, Trials
from qaflow.audit.probes.step_views import step_view, step_views
from qaflow.audit.tamper import trusted_paths
from qaflow.models.audit import AuditFinding, TaskAudit, verdict_for
from qaflow.models.probe_key import ProbeKey, ProbeKind, name_of
from qaflow.models.records import FindingCode
from qaflow.task import Task
from qaflow.task_steps import StepTask, step_tasks
from qaflow.trial.effects import Effect


class Battery(Protocol):
    """The exploit battery (`exploit_battery.battery_probe`, its task run bound): at `step`, over the step's
    observed run's view, the oracle's effect there, the step's nop views by probe and its probes summary."""

    def __call__(
        self,
        observe_run: ProbeRun,
        effect: Effect | None,
        by_probe: dict[str, list[ProbeRun]],
        probes: dict[str, object],
        step: StepTask | None = None,
    ) -> Probe[list[AuditFinding]]: ...


def audit_task_steps(
    task: Task, trials: Trials, audit: TaskAudit, *, repeats: int, max_mutants: int, battery: Battery | None = None
) -> Probe[TaskAudit]:
    """The probes of a multi-step task after its build: `audit` (lint and build done) gets their findings,
    probes summary, timing and verdict."""
    started = time.perf_counter()
    found, summary = yield from audit_steps(task, trials, repeats=repeats, max_mutants=max_mutants, battery=battery)
    audit.timings["trials"] = time.perf_counter() - started
    audit.findings = [*audit.findings, *found]
    audit.probes = {**audit.probes, **summary}
    audit.verdict = verdict_for(audit.findings)
    return audit


def audit_steps(
    task: Task, trials: Trials, *, repeats: int, max_mutants: int, battery: Battery | None = None
) -> Probe[tuple[list[AuditFinding], dict[str, Any]]]:
    """Run every step's probes through `trials` and judge them; returns the findings and the probes summary.
    With `battery`, each step the oracle passed in every run is observed (`<step>/observe`) and its exploit
    battery run on what that saw."""
    steps = step_tasks(task)
    names = [s.step_name for s in steps]
    items = [TrialRequest(ProbeKey(ProbeKind.ORACLE), i, ProbeAgent.oracle(record=i == 0)) for i in range(repeats)]
    for name in names:
        items += [
            TrialRequest(ProbeKey(ProbeKind.NOP, step=name), i, ProbeAgent.nop(step=name)) for i in range(repeats)
        ]
    runs = yield from trials(items)
    oracle = runs[:repeats]
    nops = {name: runs[repeats * (k + 1) : repeats * (k + 2)] for k, name in enumerate(names)}

    later: list[TrialRequest] = []
    mutants: dict[str, list[Mutant]] = {}
    observed: set[str] = set()
    for step in steps:
        name = step.step_name
        reached = step_views(oracle, name, first=step.index == 0)
        sources = sorted({r.reward_source for r in reached if r.reward_source}) or ["reward.txt"]
        trusted = sorted(set(trusted_paths(task)) | set(trusted_paths(step)))
        planter = ProbeAgent.tamper(sources, trusted, step=name)
        later.append(TrialRequest(ProbeKey(ProbeKind.TAMPER, step=name), 0, planter, clear_logs=False))
        effect = _effect_at(oracle[0], name) if oracle else None
        sound = len(reached) == len(oracle) > 0 and all(r.full for r in reached)
        if effect is not None and sound and max_mutants:
            mutants[name] = make_mutants(
                effect, limit=max_mutants, focus=_focus_text(step), instruction=step.instruction
            )
            later += [
                TrialRequest(ProbeKey.mutant(m.name, name), 0, ProbeAgent.of_mutant(m, step=name))
                for m in mutants[name]
            ]
        if effect is not None and sound and battery is not None:
            observe = ProbeAgent.observe(outputs=effect.output_digests(), step=name)
            later.append(TrialRequest(ProbeKey(ProbeKind.OBSERVE, step=name), 0, observe))
            observed.add(name)
    done = iter((yield from trials(later)))

    findings: list[AuditFinding] = []
    probes: dict[str, Any] = {"oracle": _summary(oracle), "steps": {}}
    for step in steps:
        name, first = step.step_name, step.index == 0
        tamper = next(done)
        mutant_runs = [next(done) for _ in mutants.get(name, [])]
        observe_run = next(done) if name in observed else None
        for m, run in zip(mutants.get(name, []), mutant_runs, strict=True):
            run.description = m.description
        views = {
            "oracle": step_views(oracle, name, first=first),
            "nop": step_views(nops[name], name, first=first),
            "tamper": step_views([tamper], name, first=first),
            "mutants": step_views(mutant_runs, name, first=first),
        }
        findings += judge_step(name, views["oracle"], views["nop"], views["tamper"], views["mutants"])
        probes["steps"][name] = {key: _summary(group) for key, group in views.items() if key != "mutants"}
        probes["steps"][name]["mutants"] = {"generated": len(mutant_runs)}
        probes["steps"][name]["mutant_rewards"] = {
            name_of(r.probe, ProbeKind.MUTANT): r.reward for r in views["mutants"]
        }
        if observe_run is not None and battery is not None:
            effect = _effect_at(oracle[0], name)
            view = step_view(observe_run, step)
            found = yield from battery(
                view, effect, {str(ProbeKey(ProbeKind.NOP)): views["nop"]}, probes["steps"][name], step=step
            )
            findings += [_tagged(f, name) for f in found]
    return findings, probes


def judge_step(
    name: str, oracle: list[ProbeRun], nop: list[ProbeRun], tamper: list[ProbeRun], mutants: list[ProbeRun]
) -> list[AuditFinding]:
    """`judge` on one step's runs, each finding naming the step; a setup that always fails is `build_failed`."""
    if oracle and all(r.error_kind == SETUP_FAILED for r in oracle):
        run = oracle[0]
        finding = AuditFinding(
            code=FindingCode.BUILD_FAILED,
            message=(
                f"step {name!r}: its setup failed in every run ({run.error}); fix steps/{name}/workdir/setup.sh "
                "(or the step's healthcheck) so the step can start"
            ),
            evidence={"runs": len(oracle), "setup_output": run.setup_output, "first": run.brief()},
        )
        return [_tagged(finding, name)]
    found = judge(nop, oracle, tamper[0] if tamper else None, mutants)
    return [_tagged(f, name) for f in found]


def _tagged(finding: AuditFinding, name: str) -> AuditFinding:
    message = finding.message
    if not message.startswith("step "):
        message = f"step {name!r}: " + message.replace("solution/solve.sh", f"steps/{name}/solution/solve.sh")
    return finding.model_copy(update={"message": message, "evidence": {**finding.evidence, "step": name}})


def _effect_at(run: ProbeRun, name: str) -> Effect | None:
    return run.effects.get(name)


def _focus_text(step: StepTask) -> str:
    """The step's instruction and its verifier's files: the files they mention are mutated first."""
    parts = [step.instruction]
    for folder in step.test_folders:
        for path in sorted(folder.rglob("*")):
            if path.is_file() and path.stat().st_size < 200_000:
                parts.append(path.read_text(encoding="utf-8", errors="replace"))
    return "\n".join(parts)


def _summary(runs: Sequence[ProbeRun]) -> dict[str, list[Any]]:
    return {"rewards": [r.reward for r in runs], "exit": [r.exit_status for r in runs]}
