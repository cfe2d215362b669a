"""The evidence-driven plan's stopping rule: when one nop trial, one oracle trial, the observed oracle run
and their verifier reruns settle a task, and what each side (nop, oracle) gets when they do not.

A side gets the fixed plan's trials (`repeats` in all) when its runs disagree, one of them ended
uncleanly or the reference solution's outputs varied; it gets only the outcomes it lacks when the
verifier's reruns ran out of time (nop); and a side whose every run timed out is settled by two runs:
a timeout costs the whole timeout, and more of them could rename the finding (`broken_solution`,
`false_rejection` or `flaky`) but never clear it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from qaflow.audit.observe import MAX_DIGESTS
from qaflow.audit.probe_run import ProbeRun
from qaflow.models.trial import ExitStatus
from qaflow.trial.effects import Effect

Side = Literal["nop", "oracle"]

TIMEOUTS = {ExitStatus.AGENT_TIMEOUT.value, ExitStatus.VERIFIER_TIMEOUT.value}
TIMEOUT_RUNS = 2
"""Runs that settle a side whose every run timed out."""


@dataclass(frozen=True)
class Escalation:
    """Why a side is not settled, and how many trials it needs: `trials` more, or (None) the fixed plan's."""

    side: Side
    why: str
    trials: int | None = None


def escalations(
    nop: list[ProbeRun], oracle: list[ProbeRun], observe_run: ProbeRun, effect: Effect | None, repeats: int
) -> list[Escalation]:
    """Why one trial each of nop and oracle (with reruns) does not settle the task, if it does not.

    Settled means: every nop and oracle trial (the observed oracle run included) ended cleanly, or every
    run of its side timed out and there are two of them; the nop's outcomes (its trial and its reruns)
    number at least `repeats` and agree; the oracle's (its trial, the observed run and its reruns)
    number at least 2 x repeats + 1 and agree; and the observed run's reference solution left every
    output the first one wrote byte for byte as it did. A verifier whose oracle reruns disagree is then
    confirmed by `needs_confirmation`'s trials."""
    why: list[Escalation] = []
    sides: dict[Side, list[ProbeRun]] = {"nop": nop, "oracle": [*oracle, observe_run]}
    timed_out: set[Side] = set()
    for side, runs in sides.items():
        unclean = [r for r in runs if r.status is not ExitStatus.OK or r.error_kind]
        if runs and all(r.exit_status in TIMEOUTS and not r.error_kind for r in runs):
            timed_out.add(side)
            if len(runs) < TIMEOUT_RUNS:
                first = runs[0]
                note = f"{side} run {first.attempt} ended {first.exit_status} (a timed-out side is settled by two runs)"
                why.append(Escalation(side, note, TIMEOUT_RUNS - len(runs)))
            continue
        for run in unclean:
            kind = f" ({run.error_kind})" if run.error_kind else ""
            why.append(Escalation(side, f"{run.probe} run {run.attempt} ended {run.exit_status}{kind}"))
    nop_outcomes = [o for r in nop for o in (r.full, *r.reruns)]
    if "nop" not in timed_out:
        if len(set(nop_outcomes)) > 1:
            why.append(Escalation("nop", "the nop's verifier reruns disagree"))
        elif nop and len(nop_outcomes) < repeats:
            short = f"{len(nop_outcomes)} nop outcomes of {repeats} (the verifier's reruns ran out of time)"
            why.append(Escalation("nop", short, repeats - len(nop_outcomes)))
    if "oracle" in timed_out:
        return why
    oracle_outcomes = [o for r in sides["oracle"] for o in (r.full, *r.reruns)]
    if len(set(oracle_outcomes)) == 1 and len(oracle_outcomes) < 2 * repeats + 1:
        short = f"{len(oracle_outcomes)} oracle outcomes of {2 * repeats + 1} (the verifier's reruns ran out of time)"
        why.append(Escalation("oracle", short))
    outputs = effect.output_digests() if effect is not None else {}
    seen = observe_run.observation.output_digests if observe_run.observation else {}
    compared = [p for p in sorted(outputs) if "\n" not in p][:MAX_DIGESTS]
    varied = [p for p in compared if seen.get(p) != outputs[p]]
    if observe_run.status is ExitStatus.OK and varied:
        why.append(
            Escalation("oracle", f"the reference solution's outputs differ between runs ({', '.join(varied[:3])})")
        )
    return why


def added_attempts(why: list[Escalation], side: Side, have: list[ProbeRun], repeats: int) -> list[int]:
    """The attempt numbers of the trials `side` gets: the fixed plan's missing ones when any reason asks for
    them, else as many as the largest count asked, numbered after those it has."""
    asked = [e for e in why if e.side == side]
    if not asked:
        return []
    taken = {r.attempt for r in have}
    if any(e.trials is None for e in asked):
        return [i for i in range(repeats) if i not in taken]
    start = max(taken, default=-1) + 1
    return list(range(start, start + max(e.trials or 0 for e in asked)))


MIN_CONFIRM_RUNS = 8
"""Oracle trials added, at the least, when the verifier's reruns disagree with oracle runs that agree."""


def verifier_reruns(observe_run: ProbeRun) -> list[bool]:
    """The outcomes (full reward or not) of the verifier's reruns the observe probe recorded."""
    return observe_run.observation.reruns if observe_run.observation else []


def needs_confirmation(oracle: list[ProbeRun], observe_run: ProbeRun) -> bool:
    """Whether the oracle runs all agree (all full reward, or none) while the verifier's reruns on the
    observed run's final state, or that run itself when there are none, do not agree with them."""
    reruns = verifier_reruns(observe_run)
    outcomes = {r.full for r in oracle}
    return len(outcomes) == 1 and not set(reruns or [observe_run.full]) <= outcomes


def confirms_again(oracle: list[ProbeRun], observe_run: ProbeRun, rounds_done: int) -> bool:
    """Whether another round of confirming oracle trials runs: the first when `needs_confirmation`, a
    second when the first left every trial agreeing while the verifier's reruns on one unchanged state
    gave both outcomes (chance decides there, as no verifier that only changes what it checks does)."""
    if rounds_done == 0:
        return needs_confirmation(oracle, observe_run)
    mixed = len(set(verifier_reruns(observe_run))) > 1
    return rounds_done == 1 and mixed and needs_confirmation(oracle, observe_run)
