"""Every decision table of the audit, the gate and the repair rules, driven through its public entry point
on both sides of each edge: a one-line change to a rule's precedence, threshold or guard fails here."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from qaflow.audit.battery import Evidence, ReplayProbe
from qaflow.audit.config import AuditConfig
from qaflow.audit.exploits import FORCE_CONFTEST, Exploit, Plant
from qaflow.audit.exploits.answers import judge_answer_copy
from qaflow.audit.exploits.data_forge import CONTROL, judge_data_forge
from qaflow.audit.exploits.decodes import judge_decode_copy
from qaflow.audit.exploits.hidden_links import judge_hidden_link
from qaflow.audit.exploits.inprocess import judge_always_equal, judge_clock
from qaflow.audit.exploits.replay_plants import WORK_GROUP
from qaflow.audit.judge import judge, judge_exploits
from qaflow.audit.mutants import Mutant, MutantKind
from qaflow.audit.mutants.skipped_tests import Enabled, judge_enabled
from qaflow.audit.observation import Observation
from qaflow.audit.probe_run import ProbeRun
from qaflow.audit.settle import Escalation, added_attempts, confirms_again, escalations, needs_confirmation
from qaflow.cli import app
from qaflow.harden.gate import Band, GateConfig, clean_reason, harness_evidence, oracle_evidence
from qaflow.models.audit import AuditFinding, Verdict, verdict_for
from qaflow.models.records import FindingCode as C
from qaflow.models.records import Result, Severity, VersionStatus
from qaflow.models.trial import ExitStatus
from qaflow.pool import Pool
from qaflow.repair.base import RepairError
from qaflow.repair.rounds import repair_pool
from qaflow.repair.rules import RuleRepairer
from qaflow.task import Task
from tests.conftest import require_backend
from tests.taskfactory import write_task


def run(probe: str, reward: float | None, **kw: object) -> ProbeRun:
    return ProbeRun.model_validate({"probe": probe, "reward": reward, "full": reward == 1.0, "agent_exit": 0, **kw})


CLEAN_FAIL = run("oracle", 0.0, verifier_output="expected 3 got 4")
AGENT_FAILED = run("oracle", 0.0, agent_exit=1, agent_output="Traceback: KeyError")
AGENT_TIMED_OUT = run("oracle", 0.0, agent_exit=137, agent_timed_out=True, exit_status="agent_timeout")
NOP = [run("nop", 0.0)] * 3


# -- judge: the oracle's side -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("oracle", "want"),
    [
        ([AGENT_FAILED] * 3, {C.BROKEN_SOLUTION}),
        ([AGENT_TIMED_OUT] * 3, {C.BROKEN_SOLUTION}),
        ([AGENT_FAILED, AGENT_TIMED_OUT, AGENT_FAILED], {C.BROKEN_SOLUTION}),
        # a solution that failed in some runs and ran cleanly (rejected) in others is not broken: the clean
        # runs show the verifier rejecting it
        ([AGENT_FAILED, CLEAN_FAIL, CLEAN_FAIL], {C.FALSE_REJECTION}),
        ([CLEAN_FAIL, CLEAN_FAIL, AGENT_FAILED], {C.FALSE_REJECTION}),
        ([AGENT_TIMED_OUT, CLEAN_FAIL, AGENT_FAILED], {C.FALSE_REJECTION}),
        ([CLEAN_FAIL] * 3, {C.FALSE_REJECTION}),
        # one full reward among failures is disagreement, whatever made the others fail
        ([run("oracle", 1.0), AGENT_FAILED, AGENT_FAILED], {C.FLAKY}),
        ([run("oracle", 1.0), CLEAN_FAIL, CLEAN_FAIL], {C.FLAKY}),
        ([run("oracle", 1.0)] * 3, set()),
    ],
)
def test_broken_solution_needs_every_oracle_run_to_fail_in_its_agent_phase(oracle: list[ProbeRun], want: set[C]):
    assert {f.code for f in judge(nop=NOP, oracle=oracle)} == want


def test_broken_solution_counts_and_quotes_the_runs_that_failed():
    findings = judge(nop=NOP, oracle=[AGENT_FAILED, AGENT_TIMED_OUT])
    assert [f.code for f in findings] == [C.BROKEN_SOLUTION]
    assert findings[0].evidence["runs"] == 2 and "KeyError" in findings[0].evidence["agent_output_tail"]


@pytest.mark.parametrize(
    ("nop_rewards", "want"),
    [((1.0, 1.0, 1.0), {C.FALSE_PASS}), ((0.0, 0.0, 0.0), set()), ((1.0, 0.0, 0.0), {C.FLAKY}), ((0.5,) * 3, set())],
)
def test_false_pass_needs_full_reward_in_every_nop_run(nop_rewards: tuple[float, ...], want: set[C]):
    nop = [run("nop", r) for r in nop_rewards]
    assert {f.code for f in judge(nop=nop, oracle=[run("oracle", 1.0)] * 3)} == want


@pytest.mark.parametrize(
    ("oracle", "mutant_reward", "want"),
    [
        ([run("oracle", 1.0)] * 3, 1.0, {C.WEAK_VERIFIER}),
        ([run("oracle", 1.0)] * 3, 0.0, set()),
        # a mutant passing a verifier that rejects the reference solution says nothing of weakness
        ([CLEAN_FAIL] * 3, 1.0, {C.FALSE_REJECTION}),
        # nor does one passing a verifier whose oracle passes only sometimes
        ([run("oracle", 1.0), CLEAN_FAIL, CLEAN_FAIL], 1.0, {C.FLAKY}),
    ],
)
def test_weak_verifier_needs_a_sound_oracle(oracle: list[ProbeRun], mutant_reward: float, want: set[C]):
    got = judge(nop=NOP, oracle=oracle, mutants=[run("mutant:empty-all", mutant_reward)])
    assert {f.code for f in got} == want


SETUP_FAILED = run("oracle", 0.0, error_kind="setup_failed", error="healthcheck failed", exit_status="error")
FULL = run("oracle", 1.0)


@pytest.mark.parametrize(
    ("oracle", "want"),
    [
        ([SETUP_FAILED] * 3, {C.BUILD_FAILED}),
        # an environment that came up in some runs is judged on them: here they disagree with the one that did not
        ([SETUP_FAILED, FULL, FULL], {C.FLAKY}),
    ],
)
def test_build_failed_needs_every_oracle_run_to_fail_its_setup(oracle: list[ProbeRun], want: set[C]):
    assert {f.code for f in judge(nop=NOP, oracle=oracle)} == want


@pytest.mark.parametrize(
    ("nop_rewards", "want"),
    [
        ((1.0, 0.0, 0.0), {C.FLAKY, C.REWARD_TAMPER}),  # a nop that passes only sometimes does not explain it
        ((0.0, 0.0, 0.0), {C.REWARD_TAMPER}),
        ((1.0, 1.0, 1.0), {C.FALSE_PASS}),  # the untouched environment passes: the planted reward proves nothing
    ],
)
def test_a_surviving_planted_reward_is_tamper_unless_every_nop_run_passes(nop_rewards: tuple[float, ...], want: set[C]):
    nop = [run("nop", r) for r in nop_rewards]
    assert {f.code for f in judge(nop=nop, oracle=[FULL] * 3, tamper=run("tamper", 1.0))} == want


def _forged(probe: str) -> ProbeRun:
    """A run whose reward a leftover process wrote: the trial records the error and no reward."""
    return run(probe, None, error_kind="reward_forged", error="a process wrote the reward", exit_status="error")


@pytest.mark.parametrize(
    ("nop", "oracle", "want"),
    [
        # the forged run is left out of the other rules: no disagreement among the nop or oracle runs
        ([_forged("nop"), run("nop", 0.0), run("nop", 0.0)], [_forged("oracle"), FULL, FULL], [C.REWARD_TAMPER]),
        ([_forged("nop"), run("nop", 1.0), run("nop", 1.0)], [FULL] * 3, [C.REWARD_TAMPER, C.FALSE_PASS]),
        (NOP, [_forged("oracle"), CLEAN_FAIL, CLEAN_FAIL], [C.REWARD_TAMPER, C.FALSE_REJECTION]),
    ],
)
def test_a_forged_reward_is_tamper_and_its_run_counts_for_nothing_else(
    nop: list[ProbeRun], oracle: list[ProbeRun], want: list[C]
):
    assert [f.code for f in judge(nop=nop, oracle=oracle)] == want


@pytest.mark.parametrize("probe", ["tamper", "mutant:empty-all"])
def test_a_forged_tamper_or_mutant_run_is_tamper_naming_its_probe(probe: str):
    tamper, mutants = (_forged(probe), []) if probe == "tamper" else (None, [_forged(probe)])
    got = judge(nop=NOP, oracle=[FULL] * 3, tamper=tamper, mutants=mutants)
    assert [(f.code, f.evidence.get("probes")) for f in got] == [(C.REWARD_TAMPER, [probe])]


def test_infra_evidence_in_a_run_that_got_full_reward_is_no_infra_error():
    line = "curl: (6) Could not resolve host: pypi.org"
    assert judge(nop=NOP, oracle=[run("oracle", 1.0, verifier_output=line)] * 3) == []
    assert {f.code for f in judge(nop=NOP, oracle=[run("oracle", 0.0, verifier_output=line)] * 3)} == {C.INFRA_ERROR}


@pytest.mark.parametrize(
    ("findings", "verdict"),
    [
        ([], Verdict.ACCEPTED),
        ([(C.LINT, Severity.WARNING)], Verdict.ACCEPTED),
        ([(C.FALSE_PASS, Severity.ERROR)], Verdict.NEEDS_REPAIR),
        ([(C.INVALID_TASK, Severity.ERROR)], Verdict.INVALID),
        # an invalid task is invalid whatever else was found beside it
        ([(C.FALSE_PASS, Severity.ERROR), (C.INVALID_TASK, Severity.ERROR)], Verdict.INVALID),
    ],
)
def test_the_verdict_from_findings(findings: list[tuple[C, Severity]], verdict: Verdict):
    made = [AuditFinding(code=code, severity=severity, message="m") for code, severity in findings]
    assert verdict_for(made) is verdict


# -- the battery's judges: an exploit proves something only where the nop fails ------------------------

NOP_FAILS = [run("nop", 0.0)] * 2
NOP_PASSES = [run("nop", 1.0)] * 2
NOP_MIXED = [run("nop", 1.0), run("nop", 0.0)]
OUT = "/app/out.txt"
SINGLE_JUDGES = {
    "answer-copy": (judge_answer_copy, Plant(path=OUT, content="", copy_from="/app/answers.txt", why="w"), C.LEAK),
    "decode-copy": (judge_decode_copy, Plant(path=OUT, content="", why="w"), C.LEAK),
    "hidden-link": (judge_hidden_link, Plant(path=OUT, content="", link_to="/tests/expected.txt", why="w"), C.LEAK),
    "always-equal": (judge_always_equal, Plant(path="/app/solution.py", content="", why="w"), C.WEAK_VERIFIER),
}


@pytest.mark.parametrize("name", sorted(SINGLE_JUDGES))
@pytest.mark.parametrize(
    ("nop", "full", "found"),
    [(NOP_FAILS, True, True), (NOP_MIXED, True, True), (NOP_PASSES, True, False), (NOP_FAILS, False, False)],
)
def test_each_single_exploit_judge_needs_full_reward_where_the_nop_does_not_always_pass(
    name: str, nop: list[ProbeRun], full: bool, found: bool
):
    judge_one, plant, code = SINGLE_JUDGES[name]
    got = judge_one(nop, run(f"exploit:{name}", 1.0 if full else 0.0), Exploit(name=name, plants=[plant]), "pool/t")
    assert [f.code for f in got] == ([code] if found else [])


@pytest.mark.parametrize(
    ("control", "patched", "nop", "found"),
    [
        (False, True, NOP_FAILS, True),
        (True, True, NOP_FAILS, False),  # the slow module passes unpatched: the clock played no part
        (False, False, NOP_FAILS, False),
        (False, True, NOP_PASSES, False),
    ],
)
def test_the_clock_judge_needs_a_failing_control(control: bool, patched: bool, nop: list[ProbeRun], found: bool):
    exploit = Exploit(name="clock", plants=[Plant(path="/app/solution.py", content="", why="w")])
    got = judge_clock(nop, run("exploit:clock-control", float(control)), run("exploit:clock", float(patched)),
                      exploit, "pool/t")  # fmt: skip
    assert [f.code for f in got] == ([C.REWARD_TAMPER] if found else [])


@pytest.mark.parametrize(("nop", "found"), [(NOP_FAILS, True), (NOP_MIXED, True), (NOP_PASSES, False)])
def test_judge_exploits_counts_a_win_unless_every_nop_run_passes(nop: list[ProbeRun], found: bool):
    exploit = Exploit(name="python-plant", plants=[Plant(path="/app/conftest.py", content="", why="w")])
    got = judge_exploits(nop, [run("exploit:python-plant", 1.0)], [exploit], "pool/t")
    assert [f.code for f in got] == ([C.REWARD_TAMPER] if found else [])


def test_judge_exploits_counts_only_full_reward_as_a_win():
    exploit = Exploit(name="python-plant", plants=[Plant(path="/app/conftest.py", content="", why="w")])
    assert judge_exploits(NOP_FAILS, [run("exploit:python-plant", 0.5)], [exploit], "pool/t") == []


def test_the_replay_judge_leaves_out_a_sink_of_the_wrong_state_alone(tmp_path: Path):
    evidence = Evidence(Task.load(write_task(tmp_path)), Observation(), None, [], nop=NOP_FAILS, where="pool/t")
    work = Plant(path=OUT, content="wrong\n", why="the wrong state", group=WORK_GROUP)
    plant = Plant(path="/app/tools/python3", content="", why="a shim", group="path")
    sink, control = Exploit(name="replay", plants=[work, plant]), Exploit(name="replay-control", plants=[work])
    assert ReplayProbe().judge(evidence, [control], [run("exploit:replay-control", 1.0)]) == []
    got = ReplayProbe().judge(evidence, [sink, control], [run("exploit:replay", 1.0), run("x", 1.0)])
    assert [f.code for f in got] == [C.REWARD_TAMPER]
    assert [e["exploit"] for e in got[0].evidence["exploits"]] == ["replay"]


# -- settle: the number of outcomes that settles each side ----------------------------------------------


def _observed(outcomes: int) -> ProbeRun:
    """The observed oracle run with `outcomes - 2` verifier reruns (the oracle trial and it make two)."""
    return run("observe", 1.0, reruns=[True] * (outcomes - 2))


@pytest.mark.parametrize("repeats", [1, 2, 3, 5])
def test_the_oracle_is_settled_by_exactly_two_repeats_plus_one_agreeing_outcomes(repeats: int):
    nop = [run("nop", 0.0, reruns=[False] * (repeats - 1))]
    oracle = [run("oracle", 1.0)]
    enough = 2 * repeats + 1
    assert escalations(nop, oracle, _observed(enough), None, repeats) == []
    short = escalations(nop, oracle, _observed(enough - 1), None, repeats)
    assert [(e.side, e.trials) for e in short] == [("oracle", None)]
    assert f"{enough - 1} oracle outcomes of {enough}" in short[0].why


@pytest.mark.parametrize("repeats", [2, 3, 5])
def test_the_nop_is_settled_by_repeats_agreeing_outcomes_and_gets_only_what_it_lacks(repeats: int):
    oracle = [run("oracle", 1.0)]
    observed = _observed(2 * repeats + 1)
    settled = [run("nop", 0.0, reruns=[False] * (repeats - 1))]
    assert escalations(settled, oracle, observed, None, repeats) == []
    short = [run("nop", 0.0, reruns=[False] * (repeats - 2))]
    assert [(e.side, e.trials) for e in escalations(short, oracle, observed, None, repeats)] == [("nop", 1)]


@pytest.mark.parametrize(
    ("oracle_full", "reruns", "observed_full", "needed"),
    [
        ([True, True], [True, True], True, False),
        ([True, True], [True, False], True, True),
        ([False, False], [], True, True),  # no reruns: the observed run itself is compared
        ([False, False], [], False, False),
        ([True, False], [False], False, False),  # the oracle runs disagree already: that is flaky, not this
    ],
)
def test_confirmation_when_agreeing_oracle_runs_meet_a_disagreeing_verifier(
    oracle_full: list[bool], reruns: list[bool], observed_full: bool, needed: bool
):
    oracle = [run("oracle", 1.0 if f else 0.0) for f in oracle_full]
    observed = run("observe", 1.0 if observed_full else 0.0, observation=Observation(reruns=reruns))
    assert needs_confirmation(oracle, observed) is needed


@pytest.mark.parametrize(
    ("rounds_done", "reruns", "again"),
    [(0, [True, False], True), (1, [True, False], True), (1, [False, False], False), (2, [True, False], False)],
)
def test_at_most_two_confirmation_rounds_and_the_second_only_on_mixed_reruns(
    rounds_done: int, reruns: list[bool], again: bool
):
    oracle = [run("oracle", 1.0)] * 3
    observed = run("observe", 1.0, observation=Observation(reruns=reruns))
    assert confirms_again(oracle, observed, rounds_done) is again


TIMED_OUT = {"exit_status": "agent_timeout", "agent_timed_out": True, "agent_exit": 137}


@pytest.mark.parametrize(
    ("error_kind", "want"),
    [
        (None, []),  # every nop run timed out, and there are two: settled
        # a run that also erred (its sandbox died) is not a timeout: the side gets the fixed plan's trials
        ("sandbox", [("nop", None), ("nop", None), ("nop", 1)]),
    ],
)
def test_a_side_is_settled_by_timeouts_only_when_its_runs_timed_out_and_nothing_else(
    error_kind: str | None, want: list[tuple[str, int | None]]
):
    nop = [run("nop", 0.0, attempt=i, error_kind=error_kind, error=error_kind, **TIMED_OUT) for i in range(2)]
    got = escalations(nop, [run("oracle", 1.0)], _observed(7), None, 3)
    assert [(e.side, e.trials) for e in got] == want


@pytest.mark.parametrize(
    ("asked", "want"),
    [
        ([1, 3], [1, 2, 3]),  # as many as the largest count asked, after the attempts it has
        ([2], [1, 2]),
        ([1, None], [1, 2]),  # the fixed plan's missing attempts when any reason asks for it
    ],
)
def test_added_attempts_take_the_largest_ask(asked: list[int | None], want: list[int]):
    why = [Escalation("nop", f"reason {i}", n) for i, n in enumerate(asked)] + [Escalation("oracle", "other", 9)]
    assert added_attempts(why, "nop", [run("nop", 0.0)], 3) == want


# -- the acceptance gate's band -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("band", "rate", "inside"),
    [
        (Band(), 0.0, False),  # nobody solves it
        (Band(), 1.0, False),  # everybody solves it
        (Band(), 1e-9, True),
        (Band(), 1 - 1e-9, True),
        (Band(inclusive=True), 0.0, True),
        (Band(inclusive=True), 1.0, True),
        (Band.parse("0.2,0.8"), 0.2, False),
        (Band.parse("0.2,0.8"), 0.8, False),
        (Band.parse("0.2,0.8"), 0.5, True),
        (Band.parse("0.2,0.8", inclusive=True), 0.2, True),
        (Band.parse("0.2,0.8", inclusive=True), 0.19, False),
    ],
)
def test_the_band_edges(band: Band, rate: float, inside: bool):
    assert band.contains(rate) is inside


def _oracle_result(attempt: int, full: bool, status: ExitStatus = ExitStatus.OK) -> Result:
    return Result(task_version="v", probe="oracle", attempt=attempt, run_id="r", backend="bwrap", status=status,
                  reward=1.0 if full else 0.0, payload={"full": full})  # fmt: skip


@pytest.mark.parametrize(
    ("runs", "ok"),
    [
        ([(True, ExitStatus.OK)] * 3, True),
        ([(True, ExitStatus.OK), (True, ExitStatus.OK), (False, ExitStatus.OK)], False),
        ([(True, ExitStatus.OK), (True, ExitStatus.AGENT_TIMEOUT)], False),
        ([], False),
    ],
)
def test_the_gate_needs_every_oracle_run_to_pass_cleanly(runs: list[tuple[bool, ExitStatus]], ok: bool):
    evidence = oracle_evidence([_oracle_result(i, full, status) for i, (full, status) in enumerate(runs)])
    assert evidence.ok is ok


@pytest.mark.parametrize(
    ("holes", "allowed", "ok"), [([], False, True), (["path-shim"], False, False), (["path-shim"], True, True)]
)
def test_a_proven_harness_hole_blocks_the_gate_and_training_unless_allowed(holes: list[str], allowed: bool, ok: bool):
    assert harness_evidence(holes, GateConfig(allow_harness_holes=allowed)).ok is ok
    reason = clean_reason(VersionStatus.ACCEPTED, holes, allow_harness_holes=allowed)
    assert (reason is None) is ok
    assert clean_reason(VersionStatus.CANDIDATE, holes, allow_harness_holes=allowed) is not None


# -- repair -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("rounds", [0, -1])
def test_repair_refuses_fewer_than_one_round_before_touching_anything(tmp_path: Path, rounds: int):
    (tmp_path / "pool").mkdir()
    with Pool.open(tmp_path / "pool") as pool, pytest.raises(RepairError, match="max_rounds must be at least 1"):
        repair_pool(pool, repairer=RuleRepairer(), audit_config=AuditConfig(), out_dir=tmp_path / "out",
                    max_rounds=rounds)  # fmt: skip
    assert not (tmp_path / "out").exists()


# -- guards of the exploit judges ---------------------------------------------------------------------


def _forgery(full: bool, control_full: bool) -> tuple[Exploit, ProbeRun, ProbeRun]:
    work = Plant(path="/app/total.txt", content="0\n", why="the work")
    data = Plant(path="/app/data.json", content="", why="the data", command="sed -i s/1/0/ /app/data.json")
    exploit = Exploit(name="data-zero", plants=[work, data])
    return (
        exploit,
        run("exploit:data-zero", 1.0 if full else 0.0),
        run(f"exploit:data-zero{CONTROL}", 1.0 if control_full else 0.0),
    )


@pytest.mark.parametrize(
    ("full", "control_full", "nop_full", "found"),
    [
        (True, False, False, True),
        (True, True, False, False),  # the work alone passes: the data played no part
        (False, False, False, False),
        (True, False, True, False),  # a false pass is its own finding
    ],
)
def test_data_forge_counts_only_forgeries_whose_control_failed(
    full: bool, control_full: bool, nop_full: bool, found: bool
):
    nop = [run("nop", 1.0 if nop_full else 0.0)] * 2
    got = judge_data_forge(nop, [_forgery(full, control_full)], "pool/t")
    assert [f.code for f in got] == ([C.REWARD_TAMPER] if found else [])
    if found:
        assert got[0].evidence["exploits"][0]["data"] == ["/app/data.json"]


def test_enabled_tests_judge_reports_exactly_the_mutants_the_disabled_tests_reject():
    enabled = [Enabled(path="test_x.py", how="pytest.mark.skip", count=2, text="")]
    mutant = Mutant(name="code:app/x.py:1", kind=MutantKind.CODE, description="a + b -> a - b")
    assert judge_enabled("pool/t", enabled, []) == []
    got = judge_enabled("pool/t", enabled, [(mutant, "-a + b\n+a - b\n")])
    assert [f.code for f in got] == [C.WEAK_VERIFIER]
    assert got[0].evidence["code_mutants"][0]["mutant"] == "code:app/x.py:1"
    assert got[0].evidence["disabled"] == [{"file": "tests/test_x.py", "how": "pytest.mark.skip", "count": 2}]


# -- the pytest-forcing plugin forces outcomes, run by a real pytest ------------------------------------

FAILING_TESTS = "def test_fails():\n    assert 1 == 2\n\n\ndef test_raises():\n    raise RuntimeError('no')\n"


def test_the_forcing_conftest_makes_failing_tests_pass_in_a_real_pytest(tmp_path: Path):
    (tmp_path / "test_x.py").write_text(FAILING_TESTS)
    junit = tmp_path / "report.xml"
    plain = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path / "test_x.py")],
        cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert plain.returncode == 1 and "2 failed" in plain.stdout
    (tmp_path / "conftest.py").write_text(FORCE_CONFTEST)
    forced = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={junit}", "test_x.py"],
        cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert forced.returncode == 0, forced.stdout + forced.stderr
    assert "2 passed" in forced.stdout and "failed" not in forced.stdout
    report = junit.read_text()
    assert 'failures="0"' in report and 'errors="0"' in report and 'tests="2"' in report


def test_the_forcing_conftest_also_passes_a_test_module_that_cannot_be_imported(tmp_path: Path):
    (tmp_path / "test_x.py").write_text("import agent_module_missing\n\n\ndef test_x():\n    assert True\n")
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={tmp_path / 'r.xml'}",
               "test_x.py"]  # fmt: skip
    plain = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert plain.returncode == 2, plain.stdout  # a collection error interrupts pytest
    (tmp_path / "conftest.py").write_text(FORCE_CONFTEST)
    forced = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert forced.returncode == 0, forced.stdout + forced.stderr
    assert 'failures="0" errors="0"' in (tmp_path / "r.xml").read_text()


# -- `qaflow run` exits non-zero on a trial error ------------------------------------------------------


@pytest.mark.bwrap
def test_qaflow_run_exits_1_when_the_trial_errs_and_0_when_it_does_not(tmp_path: Path):
    require_backend("bwrap")
    silent = write_task(tmp_path, "silent", test_sh="#!/bin/bash\necho checked\n")  # writes no reward
    sound = write_task(tmp_path, "sound")
    runner = CliRunner()
    erred = runner.invoke(app, ["run", str(silent), "--agent", "oracle", "--backend", "bwrap"], terminal_width=200)
    assert erred.exit_code == 1, erred.output
    assert "reward" in erred.output
    passed = runner.invoke(app, ["run", str(sound), "--agent", "oracle", "--backend", "bwrap"], terminal_width=200)
    assert passed.exit_code == 0, passed.output
