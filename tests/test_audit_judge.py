"""The judging rules on synthetic probe runs: each code from its evidence, and no code without it."""

from __future__ import annotations

from qaflow.audit.judge import judge
from qaflow.audit.probe_run import ProbeRun
from qaflow.audit.runner import DEFAULT_REPEATS, repeats_for
from qaflow.records import FindingCode as C


def run(probe: str, reward: float | None, **kw) -> ProbeRun:
    return ProbeRun(probe=probe, reward=reward, full=reward == 1.0, agent_exit=kw.pop("agent_exit", 0), **kw)


def codes(**kw) -> set[C]:
    return {f.code for f in judge(**kw)}


N = 6
SOUND = {"nop": [run("nop", 0.0)] * N, "oracle": [run("oracle", 1.0)] * N}


def test_sound_task_has_no_finding():
    assert codes(**SOUND, tamper=run("tamper", 0.0), mutants=[run("mutant:empty-all", 0.0)]) == set()


def test_false_pass_and_weak_verifier_are_independent():
    got = codes(nop=[run("nop", 1.0)] * N, oracle=SOUND["oracle"], mutants=[run("mutant:x", 1.0)])
    assert got == {C.FALSE_PASS, C.WEAK_VERIFIER}
    assert codes(nop=[run("nop", 1.0)] * N, oracle=SOUND["oracle"], mutants=[run("mutant:x", 0.0)]) == {C.FALSE_PASS}


def test_weak_verifier_names_the_passing_mutants():
    findings = judge(**SOUND, mutants=[run("mutant:empty:app/out.txt", 1.0), run("mutant:truncate:a", 0.0)])
    assert [f.code for f in findings] == [C.WEAK_VERIFIER]
    assert findings[0].evidence["passing_mutants"] == ["empty:app/out.txt"]


def test_broken_solution_vs_false_rejection():
    broken = [run("oracle", 0.0, agent_exit=1, agent_output="Traceback ... KeyError")] * N
    assert codes(nop=SOUND["nop"], oracle=broken) == {C.BROKEN_SOLUTION}
    timeout = [run("oracle", 0.0, agent_exit=137, agent_timed_out=True)] * N
    assert codes(nop=SOUND["nop"], oracle=timeout) == {C.BROKEN_SOLUTION}
    rejected = [run("oracle", 0.0, verifier_output="expected 3.50 got 3.5")] * N
    assert codes(nop=SOUND["nop"], oracle=rejected) == {C.FALSE_REJECTION}
    vtimeout = [run("oracle", None, exit_status="verifier_timeout", verifier_timed_out=True)] * N
    assert codes(nop=SOUND["nop"], oracle=vtimeout) == {C.FALSE_REJECTION}


def test_flaky_reports_the_pass_rate():
    oracle = [run("oracle", 1.0)] * 4 + [run("oracle", 0.0)] * 2
    findings = judge(nop=SOUND["nop"], oracle=oracle)
    assert [f.code for f in findings] == [C.FLAKY]
    assert abs(findings[0].evidence["pass_rate"] - 4 / 6) < 1e-9
    nop = [run("nop", 1.0)] + [run("nop", 0.0)] * 5
    assert codes(nop=nop, oracle=SOUND["oracle"]) == {C.FLAKY}


def test_infra_error_is_not_a_false_rejection_or_broken_solution():
    offline = [
        run("oracle", None, error_kind="reward_missing", verifier_output="curl: (6) Could not resolve host: pypi.org")
    ] * N
    nop = [run("nop", None, error_kind="reward_missing", verifier_output="curl: (6) Could not resolve host: pypi.org")]
    assert codes(nop=nop * N, oracle=offline) == {C.INFRA_ERROR}
    no_tool = [run("oracle", 0.0, agent_exit=127, agent_output="solve.sh: line 3: jq: command not found")] * N
    assert codes(nop=SOUND["nop"], oracle=no_tool) == {C.INFRA_ERROR}


def test_reward_tamper_from_silent_failure_and_from_a_surviving_planted_reward():
    silent = [run("nop", None, error_kind="reward_missing", error="the verifier wrote no reward")] * N
    assert codes(nop=silent, oracle=SOUND["oracle"]) == {C.REWARD_TAMPER}
    assert codes(**SOUND, tamper=run("tamper", 1.0)) == {C.REWARD_TAMPER}
    assert codes(nop=[run("nop", 1.0)] * N, oracle=SOUND["oracle"], tamper=run("tamper", 1.0)) == {C.FALSE_PASS}


def test_default_repeats_catch_a_coin_flip_with_95_percent():
    assert DEFAULT_REPEATS == repeats_for() == 6
    assert 2 * 0.5**DEFAULT_REPEATS <= 0.05 < 2 * 0.5 ** (DEFAULT_REPEATS - 1)


def test_trusted_paths_are_files_the_verifier_copies_into_the_reward(tmp_path):
    from qaflow.audit.tamper import trusted_paths
    from qaflow.task import Task
    from tests.taskfactory import write_task

    test_sh = (
        "#!/bin/bash\nmkdir -p /logs/verifier /app/.grading  # publish\npython3 /tests/check.py\n"
        "cp /app/.grading/reward.txt /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n"
        "cat /app/out.txt\n"
    )
    task = Task.load(write_task(tmp_path, test_sh=test_sh))
    assert trusted_paths(task) == ["/app/.grading/reward.txt"]
