"""Settling: the trials the evidence-driven plan adds where one trial each of nop and oracle (with the
verifier's reruns and the observed oracle run) leave a side unclear (`qaflow.audit.settle`), and the
rounds of oracle trials that confirm a verifier whose reruns disagree with oracle runs that agree."""

from __future__ import annotations

from qaflow.audit.probe_agent import ProbeAgent
from qaflow.audit.probe_run import ProbeRun
from qaflow.audit.probes.context import Probe, TaskRun, TrialRequest
from qaflow.audit.settle import MIN_CONFIRM_RUNS, added_attempts, confirms_again, escalations, verifier_reruns
from qaflow.models.probe_key import ProbeKey, ProbeKind
from qaflow.trial.effects import Effect

NOP, ORACLE = ProbeKey(ProbeKind.NOP), ProbeKey(ProbeKind.ORACLE)


def settle_probe(
    run: TaskRun,
    by_probe: dict[str, list[ProbeRun]],
    observe_run: ProbeRun,
    effect: Effect | None,
    probes: dict[str, object],
) -> Probe[list[ProbeRun]]:
    """Where a side is unclear (`settle.escalations`), the trials `settle.added_attempts` asks for (the fixed
    plan's, or the outcomes it lacks), added to `by_probe`; the `evidence` summary goes into `probes`.
    Returns the added runs."""
    nop, oracle, n = by_probe.get(str(NOP), []), by_probe.get(str(ORACLE), []), run.config.repeats
    why = escalations(nop, oracle, observe_run, effect, n)
    probes["evidence"] = {"escalated": bool(why), "why": [e.why for e in why]}
    if not why:
        return []
    requests = [TrialRequest(NOP, i, ProbeAgent.nop()) for i in added_attempts(why, "nop", nop, n)]
    requests += [TrialRequest(ORACLE, i, ProbeAgent.oracle()) for i in added_attempts(why, "oracle", oracle, n)]
    more = yield from run.trials(requests)
    for r in more:
        by_probe.setdefault(r.probe, []).append(r)
    return more


def confirm_oracle_probe(
    run: TaskRun, oracle: list[ProbeRun], observe_run: ProbeRun, probes: dict[str, object]
) -> Probe[list[ProbeRun]]:
    """The oracle runs, with rounds of 2 x repeats (at least `MIN_CONFIRM_RUNS`) more while `confirms_again`.

    N trials that all agree miss a coin-flip verifier with probability 2 x 0.5^N; the reruns make that
    rare for the price of a few verifier runs, and only full trials decide `flaky` (a verifier that
    changes the state it checks disagrees with its reruns and is still judged on trials alone)."""
    reruns = verifier_reruns(observe_run)
    probes["verifier_reruns"] = {"runs": len(reruns), "full": sum(reruns)}
    extra = max(2 * run.config.repeats, MIN_CONFIRM_RUNS)
    more: list[ProbeRun] = []
    rounds = 0
    while confirms_again([*oracle, *more], observe_run, rounds):
        start = len(oracle) + len(more)
        more += yield from run.trials(
            [TrialRequest(ORACLE, i, ProbeAgent.oracle()) for i in range(start, start + extra)]
        )
        rounds += 1
    if rounds:
        probes["oracle_confirm"] = {"extra_runs": len(more), "full": sum(r.full for r in more)}
    return [*oracle, *more]
