"""The evidence-driven plan's stopping rule (`settle.escalations`, `settle.added_attempts`), over generated
combinations of outcomes: a task is settled only when every side's outcomes agree, are numerous enough
and the reference solution's outputs did not vary; a side that is not gets the fixed plan's trials, or
only the outcomes it lacks, and a side whose every run timed out is settled by two runs."""

from __future__ import annotations

import hashlib

from hypothesis import given
from hypothesis import strategies as st

from qaflow.audit.observation import Observation
from qaflow.audit.probe_run import ProbeRun
from qaflow.audit.settle import TIMEOUTS, Escalation, added_attempts, escalations
from qaflow.trial.effects import ChangeKind, Effect, FileChange

REPEATS = 6
OUT = b"total: 42\n"


def _run(probe: str, full: bool, reruns: list[bool], status: str = "ok") -> ProbeRun:
    return ProbeRun(probe=probe, reward=float(full), full=full, reruns=reruns, exit_status=status)


def _observed(full: bool, reruns: list[bool], digests: dict[str, str], status: str = "ok") -> ProbeRun:
    run = _run("observe", full, reruns, status)
    run.observation = Observation(observed=True, reruns=reruns, output_digests=digests)
    return run


EFFECT = Effect(changes=[FileChange(path="/app/out.txt", kind=ChangeKind.CREATED, content=OUT)])
SAME = {"/app/out.txt": hashlib.sha256(OUT).hexdigest()}


def _why(*args) -> list[str]:
    return [e.why for e in escalations(*args)]


def test_a_sound_task_is_settled_by_one_trial_each_and_reruns():
    nop = [_run("nop", False, [False] * (REPEATS - 1))]
    oracle = [_run("oracle", True, [])]
    assert escalations(nop, oracle, _observed(True, [True] * (2 * REPEATS - 1), SAME), EFFECT, REPEATS) == []


def test_each_rule_asks_for_more_trials_and_says_why():
    nop, oracle = [_run("nop", False, [False] * 5)], [_run("oracle", True, [])]
    observed = _observed(True, [True] * 11, SAME)
    flaky_nop = [_run("nop", False, [False, True, False, False, False])]
    assert escalations(flaky_nop, oracle, observed, EFFECT, REPEATS) == [
        Escalation("nop", "the nop's verifier reruns disagree")
    ]
    short = escalations([_run("nop", False, [False])], oracle, observed, EFFECT, REPEATS)
    assert short == [Escalation("nop", "2 nop outcomes of 6 (the verifier's reruns ran out of time)", 4)]
    (why,) = escalations(nop, oracle, _observed(True, [True] * 3, SAME), EFFECT, REPEATS)
    assert why.why.startswith("5 oracle outcomes of 13") and (why.side, why.trials) == ("oracle", None)
    (why,) = _why(nop, oracle, _observed(True, [True] * 11, {"/app/out.txt": "0" * 64}), EFFECT, REPEATS)
    assert why == "the reference solution's outputs differ between runs (/app/out.txt)"
    (why,) = _why(nop, oracle, _observed(True, [True] * 11, {}), EFFECT, REPEATS)
    assert "outputs differ" in why  # an output the second run did not leave at all
    (why,) = _why(nop, [_run("oracle", True, [], status="agent_timeout")], observed, EFFECT, REPEATS)
    assert why == "oracle run 0 ended agent_timeout"


def test_a_side_whose_every_run_timed_out_is_settled_by_two_runs():
    """A reference solution that runs into its timeout twice is not run into it four more times: more
    runs could only rename its finding (flaky instead of broken_solution), never clear it."""
    nop = [_run("nop", False, [False] * 5)]
    timed_out = [_run("oracle", False, [], status="agent_timeout")]
    assert escalations(nop, timed_out, _observed(False, [], {}, status="agent_timeout"), EFFECT, REPEATS) == []
    once = escalations(nop, timed_out, _observed(True, [True] * 11, SAME), EFFECT, REPEATS)
    assert [(e.side, e.trials) for e in once] == [("oracle", None)]
    slow_nop = [_run("nop", False, [], status="verifier_timeout")]
    observed = _observed(True, [True] * 11, SAME)
    (why,) = escalations(slow_nop, [_run("oracle", True, [])], observed, EFFECT, REPEATS)
    assert (why.side, why.trials) == ("nop", 1) and "settled by two runs" in why.why
    assert added_attempts([why], "nop", slow_nop, REPEATS) == [1]


def test_added_attempts_are_the_fixed_plans_missing_ones_or_the_outcomes_a_side_lacks():
    have = [_run("nop", False, [False]), _run("nop", False, [])]
    have[1].attempt = 3
    fixed = Escalation("nop", "disagree")
    assert added_attempts([fixed], "nop", have, REPEATS) == [1, 2, 4, 5]
    assert added_attempts([Escalation("nop", "short", 2)], "nop", have, REPEATS) == [4, 5]
    assert added_attempts([Escalation("nop", "short", 2), fixed], "nop", have, REPEATS) == [1, 2, 4, 5]
    assert added_attempts([fixed], "oracle", [], REPEATS) == []


def test_oracle_reruns_that_disagree_are_left_to_the_confirmation_trials():
    """Not an escalation: `needs_confirmation` adds 2 x repeats oracle trials for exactly that case."""
    nop, oracle = [_run("nop", False, [False] * 5)], [_run("oracle", True, [])]
    assert escalations(nop, oracle, _observed(True, [True, False] * 5 + [True], SAME), EFFECT, REPEATS) == []


outcome_lists = st.lists(st.booleans(), max_size=14)
statuses = st.sampled_from(["ok", "ok", "error", "agent_timeout", "verifier_timeout"])


@given(
    nop_full=st.booleans(),
    nop_reruns=outcome_lists,
    oracle_full=st.booleans(),
    observed_full=st.booleans(),
    observed_reruns=outcome_lists,
    same_output=st.booleans(),
    status=statuses,
    oracle_status=statuses,
    observed_status=statuses,
    repeats=st.integers(1, 8),
)
def test_each_side_gets_what_its_evidence_lacks(
    nop_full,
    nop_reruns,
    oracle_full,
    observed_full,
    observed_reruns,
    same_output,
    status,
    oracle_status,
    observed_status,
    repeats,
):
    nop = [_run("nop", nop_full, nop_reruns, status)]
    oracle = [_run("oracle", oracle_full, [], oracle_status)]
    digests = SAME if same_output else {"/app/out.txt": "1" * 64}
    observed = _observed(observed_full, observed_reruns, digests, observed_status)
    why = escalations(nop, oracle, observed, EFFECT, repeats)

    nop_side = [nop_full, *nop_reruns]
    nop_settled = status == "ok" and len(set(nop_side)) == 1 and len(nop_side) >= repeats
    if status in TIMEOUTS:
        nop_wants = [1]  # one more run: two timed-out runs settle a side
    elif status != "ok" or len(set(nop_side)) > 1:
        nop_wants = list(range(1, repeats))  # the fixed plan's (none more where repeats is 1)
    else:
        nop_wants = list(range(1, 1 + max(0, repeats - len(nop_side))))
    oracle_side = [oracle_full, observed_full, *observed_reruns]
    if oracle_status in TIMEOUTS and observed_status in TIMEOUTS:
        oracle_settled = True
    elif oracle_status != "ok" or observed_status != "ok":
        oracle_settled = False
    else:
        numerous = len(set(oracle_side)) > 1 or len(oracle_side) >= 2 * repeats + 1
        oracle_settled = numerous and same_output
    assert added_attempts(why, "nop", nop, repeats) == nop_wants, why
    assert added_attempts(why, "oracle", oracle, repeats) == ([] if oracle_settled else list(range(1, repeats))), why
    assert (why == []) == (nop_settled and oracle_settled)
