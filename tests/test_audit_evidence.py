"""The evidence-driven plan's stopping rule (`runner.escalations`), over generated combinations of
outcomes: a task is settled only when every side's outcomes agree, are numerous enough and the
reference solution's outputs did not vary; anything else asks for the fixed plan's trials."""

from __future__ import annotations

import hashlib

from hypothesis import given
from hypothesis import strategies as st

from qaflow.audit.effects import ChangeKind, Effect, FileChange
from qaflow.audit.observation import Observation
from qaflow.audit.probe_run import ProbeRun
from qaflow.audit.runner import escalations

REPEATS = 6
OUT = b"total: 42\n"


def _run(probe: str, full: bool, reruns: list[bool], status: str = "ok") -> ProbeRun:
    return ProbeRun(probe=probe, reward=float(full), full=full, reruns=reruns, exit_status=status)


def _observed(full: bool, reruns: list[bool], digests: dict[str, str]) -> ProbeRun:
    run = _run("observe", full, reruns)
    run.extra["observation"] = Observation(observed=True, reruns=reruns, output_digests=digests).model_dump(mode="json")
    return run


EFFECT = Effect(changes=[FileChange(path="/app/out.txt", kind=ChangeKind.CREATED, content=OUT)])
SAME = {"/app/out.txt": hashlib.sha256(OUT).hexdigest()}


def test_a_sound_task_is_settled_by_one_trial_each_and_reruns():
    nop = [_run("nop", False, [False] * (REPEATS - 1))]
    oracle = [_run("oracle", True, [])]
    assert escalations(nop, oracle, _observed(True, [True] * (2 * REPEATS - 1), SAME), EFFECT, REPEATS) == []


def test_each_rule_asks_for_more_trials_and_says_why():
    nop, oracle = [_run("nop", False, [False] * 5)], [_run("oracle", True, [])]
    observed = _observed(True, [True] * 11, SAME)
    flaky_nop = [_run("nop", False, [False, True, False, False, False])]
    assert escalations(flaky_nop, oracle, observed, EFFECT, REPEATS) == ["the nop's verifier reruns disagree"]
    short = escalations([_run("nop", False, [False])], oracle, observed, EFFECT, REPEATS)
    assert short == ["2 nop outcomes of 6 (the verifier's reruns ran out of time)"]
    (why,) = escalations(nop, oracle, _observed(True, [True] * 3, SAME), EFFECT, REPEATS)
    assert why.startswith("5 oracle outcomes of 13")
    (why,) = escalations(nop, oracle, _observed(True, [True] * 11, {"/app/out.txt": "0" * 64}), EFFECT, REPEATS)
    assert why == "the reference solution's outputs differ between runs (/app/out.txt)"
    (why,) = escalations(nop, oracle, _observed(True, [True] * 11, {}), EFFECT, REPEATS)
    assert "outputs differ" in why  # an output the second run did not leave at all
    (why,) = escalations(nop, [_run("oracle", True, [], status="agent_timeout")], observed, EFFECT, REPEATS)
    assert why == "oracle run 0 ended agent_timeout"


def test_oracle_reruns_that_disagree_are_left_to_the_confirmation_trials():
    """Not an escalation: `needs_confirmation` adds 2 x repeats oracle trials for exactly that case."""
    nop, oracle = [_run("nop", False, [False] * 5)], [_run("oracle", True, [])]
    assert escalations(nop, oracle, _observed(True, [True, False] * 5 + [True], SAME), EFFECT, REPEATS) == []


outcome_lists = st.lists(st.booleans(), max_size=14)


@given(
    nop_full=st.booleans(),
    nop_reruns=outcome_lists,
    oracle_full=st.booleans(),
    observed_full=st.booleans(),
    observed_reruns=outcome_lists,
    same_output=st.booleans(),
    status=st.sampled_from(["ok", "ok", "error", "agent_timeout", "verifier_timeout"]),
    repeats=st.integers(1, 8),
)
def test_settled_only_when_every_side_agrees_is_numerous_and_outputs_repeat(
    nop_full, nop_reruns, oracle_full, observed_full, observed_reruns, same_output, status, repeats
):
    nop = [_run("nop", nop_full, nop_reruns, status)]
    oracle = [_run("oracle", oracle_full, [])]
    observed = _observed(observed_full, observed_reruns, SAME if same_output else {"/app/out.txt": "1" * 64})
    why = escalations(nop, oracle, observed, EFFECT, repeats)
    nop_side = [nop_full, *nop_reruns]
    oracle_side = [oracle_full, observed_full, *observed_reruns]
    oracle_agrees = len(set(oracle_side)) == 1
    settled = (
        status == "ok"
        and len(set(nop_side)) == 1
        and len(nop_side) >= repeats
        and (not oracle_agrees or len(oracle_side) >= 2 * repeats + 1)
        and same_output
    )
    assert (why == []) == settled, why
