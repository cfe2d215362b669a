"""The probes of a single-step task after its build: one trial each of nop and oracle with the verifier's
reruns (the fixed plan's `repeats` each with `exhaustive`, or where the task's verifier runs in a separate
environment), then the tamper and observe probes, mutants of the oracle's recorded effect (after the
observation: a file the verifier never reads is no wrong answer), code mutants and the task's disabled tests,
the trials settling and confirmation add where the evidence is unclear, the judge, and the exploit battery."""

from __future__ import annotations

from qaflow.audit.judge import effect_lost, judge
from qaflow.audit.mutant_lookup import focus_text
from qaflow.audit.mutants import Mutant, deliverables, make_mutants
from qaflow.audit.mutants.edge import edge_mutants, verifier_sources
from qaflow.audit.mutants.output import output_mutants
from qaflow.audit.mutants.overfit import overfit_mutants
from qaflow.audit.observation import Observation
from qaflow.audit.probe_agent import ProbeAgent
from qaflow.audit.probe_run import ProbeRun
from qaflow.audit.probes.code_mutants import code_mutant_probe
from qaflow.audit.probes.context import Probe, TaskRun, TrialRequest
from qaflow.audit.probes.enabled_tests import enabled_tests_probe
from qaflow.audit.probes.exploit_battery import HarnessTries, battery_probe
from qaflow.audit.probes.settling import confirm_oracle_probe, settle_probe
from qaflow.audit.tamper import trusted_paths
from qaflow.audit.work_items import mutant_timeout
from qaflow.models.audit import AuditFinding
from qaflow.models.probe_key import ProbeKey, ProbeKind, name_of
from qaflow.task import VerifierEnvironmentMode
from qaflow.trial.effects import Effect

NOP, ORACLE, TAMPER, OBSERVE = (
    ProbeKey(k) for k in (ProbeKind.NOP, ProbeKind.ORACLE, ProbeKind.TAMPER, ProbeKind.OBSERVE)
)


def single_step_probe(run: TaskRun, harness: HarnessTries, probes: dict[str, object]) -> Probe[list[AuditFinding]]:
    """The task's findings from its trials; each probe's summary goes into `probes`."""
    task, config = run.task, run.config
    findings: list[AuditFinding] = []
    n = config.repeats
    observing = config.observe and task.verifier_mode is VerifierEnvironmentMode.SHARED
    adaptive = observing and not config.exhaustive
    first = n if not adaptive else 1
    requests = [TrialRequest(NOP, i, ProbeAgent.nop(reruns=n - 1 if adaptive else 0)) for i in range(first)]
    requests += [TrialRequest(ORACLE, 0, ProbeAgent.oracle(record=True))]
    requests += [TrialRequest(ORACLE, i, ProbeAgent.oracle()) for i in range(1, first)]
    runs = yield from run.trials(requests)
    by_probe: dict[str, list[ProbeRun]] = {}
    for r in runs:
        by_probe.setdefault(r.probe, []).append(r)
    oracle = by_probe.get(str(ORACLE), [])

    # phase 2 needs the oracle: the reward file it writes (tamper) and its recorded effect (mutants)
    sources = sorted({r.reward_source for r in oracle if r.reward_source}) or ["reward.txt"]
    phase2 = [TrialRequest(TAMPER, 0, ProbeAgent.tamper(sources, trusted_paths(task)), clear_logs=False)]
    effect = oracle[0].effect if oracle else None
    mutate = effect is not None and all(r.full for r in oracle) and config.max_mutants > 0
    mutants: list[Mutant] = []
    if observing:
        outputs = effect.output_digests() if effect is not None else {}
        reruns = max(config.verifier_reruns, 2 * n - 1) if adaptive else config.verifier_reruns
        phase2.append(TrialRequest(OBSERVE, 0, ProbeAgent.observe(reruns=reruns, outputs=outputs)))
    elif mutate and effect is not None:
        mutants = _mutants(run, effect, None, probes)
        phase2 += [TrialRequest(ProbeKey.mutant(m.name), 0, ProbeAgent.of_mutant(m)) for m in mutants]
    tamper, *mutant_runs = yield from run.trials(phase2)
    observe_run = mutant_runs.pop() if observing else None
    code_findings: list[AuditFinding] = []
    cap = mutant_timeout(oracle)
    if observe_run is not None and mutate and effect is not None:
        # mutants wait for the observation: a file the verifier never reads is no wrong answer
        observation = observe_run.observation
        mutants = _mutants(run, effect, observation, probes)
        requests = [TrialRequest(ProbeKey.mutant(m.name), 0, ProbeAgent.of_mutant(m)) for m in mutants]
        mutant_runs = (yield from run.trials(requests)) if requests else []
        if observation is not None and config.code_mutants:
            code_findings = yield from code_mutant_probe(run, effect, observation, probes, cap)
    if mutate and effect is not None and config.code_mutants:
        code_findings += yield from enabled_tests_probe(run, effect, probes, cap)
    if observe_run is not None:
        if adaptive:
            yield from settle_probe(run, by_probe, observe_run, effect, probes)
            oracle = by_probe.get(str(ORACLE), [])
        oracle = yield from confirm_oracle_probe(run, oracle, observe_run, probes)
        by_probe[str(ORACLE)] = oracle
    for m, r in zip(mutants, mutant_runs, strict=True):
        r.description = m.description
    findings += judge(by_probe.get(str(NOP), []), oracle, tamper, mutant_runs) + code_findings
    findings += effect_lost(oracle)
    if observe_run is not None:
        findings += yield from battery_probe(run, harness, observe_run, effect, by_probe, probes)
    by_probe[str(TAMPER)] = [tamper]
    for name, group in by_probe.items():
        view: dict[str, object] = {"rewards": [r.reward for r in group], "exit": [r.exit_status for r in group]}
        outcomes = [o for r in group for o in r.reruns]
        if outcomes:
            view |= {"reruns": len(outcomes), "reruns_full": sum(outcomes)}
        probes[name] = view
    probes["mutant_rewards"] = {name_of(r.probe, ProbeKind.MUTANT): r.reward for r in mutant_runs}
    return findings


def _mutants(run: TaskRun, effect: Effect, observation: Observation | None, probes: dict[str, object]) -> list[Mutant]:
    """The mutants of the oracle's effect whose targets are deliverables (`mutants.deliverables`)."""
    focus = focus_text(run.task)
    deliverable = deliverables(observation, focus)
    instruction = run.task.instruction
    mutants = make_mutants(
        effect, limit=run.config.max_mutants, focus=focus, deliverable=deliverable, instruction=instruction
    )
    mutants += overfit_mutants(effect, observation, instruction)
    mutants += output_mutants(effect, observation)
    mutants += edge_mutants(effect, observation, instruction, verifier_sources(run.task.tests_dir), deliverable)
    probes["mutants"] = {"generated": len(mutants), "changes": len(effect.changes)}
    return mutants
