"""The judging rules on synthetic probe runs: each code from its evidence, and no code without it."""

from __future__ import annotations

from qaflow.audit.judge import judge
from qaflow.audit.probe_run import ProbeRun
from qaflow.audit.runner import DEFAULT_REPEATS, repeats_for
from qaflow.models.records import FindingCode, Severity
from qaflow.models.records import FindingCode as C


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


def test_a_run_the_sandbox_failed_makes_no_disagreement():
    died = run("oracle", None, exit_status="error", error_kind="sandbox", error="the container is gone")
    assert codes(nop=SOUND["nop"], oracle=[run("oracle", 1.0)] * (N - 1) + [died]) == {C.INFRA_ERROR}
    lost = run("nop", None, error_kind="reward_missing", verifier_output="Could not resolve host: x")
    # a verifier that passes the untouched environment whenever it runs still does
    assert codes(nop=[run("nop", 1.0)] * (N - 1) + [lost], oracle=SOUND["oracle"]) == {C.INFRA_ERROR, C.FALSE_PASS}
    # the verifier's own disagreement is still flaky beside an infra failure
    mixed = [run("oracle", 1.0)] * 3 + [run("oracle", 0.0)] * 2 + [died]
    assert codes(nop=SOUND["nop"], oracle=mixed) == {C.INFRA_ERROR, C.FLAKY}


def test_infra_error_is_not_a_false_rejection_or_broken_solution():
    offline = [
        run("oracle", None, error_kind="reward_missing", verifier_output="curl: (6) Could not resolve host: pypi.org")
    ] * N
    nop = [run("nop", None, error_kind="reward_missing", verifier_output="curl: (6) Could not resolve host: pypi.org")]
    assert codes(nop=nop * N, oracle=offline) == {C.INFRA_ERROR}


def infra_finding(nop=SOUND["nop"], oracle=SOUND["oracle"]):
    findings = judge(nop=nop, oracle=oracle)
    assert [f.code for f in findings] == [C.INFRA_ERROR], findings
    return findings[0]


def test_a_missing_command_alone_is_the_task_s_fault():
    no_tool = [run("oracle", 0.0, agent_exit=127, agent_output="/solution/solve.sh: line 3: jq: command not found")]
    assert codes(nop=SOUND["nop"], oracle=no_tool * N) == {C.BROKEN_SOLUTION}
    verifier = [run("oracle", 0.0, verifier_output="/tests/test.sh: line 2: uvx: command not found")] * N
    assert codes(nop=SOUND["nop"], oracle=verifier) == {C.FALSE_REJECTION}


def test_a_failed_install_is_the_evidence_and_the_missing_command_its_consequence():
    output = (
        "Reading package lists...\nE: Unable to locate package jq\n/solution/solve.sh: line 4: jq: command not found"
    )
    finding = infra_finding(oracle=[run("oracle", 0.0, agent_exit=127, agent_output=output)] * N)
    assert finding.evidence["kind"] == "install_failed"
    assert finding.evidence["line"] == "E: Unable to locate package jq"
    assert finding.evidence["runs"][0]["then"] == "/solution/solve.sh: line 4: jq: command not found"
    assert "E: Unable to locate package jq" in finding.message and "install_failed" in finding.message


def test_name_resolution_failure_is_infra():
    line = "urllib.error.URLError: <urlopen error [Errno -3] Temporary failure in name resolution>"
    finding = infra_finding(oracle=[run("oracle", 0.0, verifier_output=f"Traceback ...\n{line}")] * N)
    evidence = finding.evidence
    assert (evidence["kind"], evidence["line"], evidence["phase"]) == ("network", line, "verifier")
    assert line in finding.message


def test_a_refused_connection_to_the_task_s_own_server_is_not_infra():
    refused = (
        "requests.exceptions.ConnectionError: HTTPConnectionPool(host='127.0.0.1', port=8080): Max retries "
        "exceeded with url: /total (Caused by NewConnectionError('<urllib3.connection.HTTPConnection object>: "
        "Failed to establish a new connection: [Errno 111] Connection refused'))\n"
        "curl: (7) Failed to connect to localhost port 8080 after 0 ms: Couldn't connect to server\n"
        "urllib.error.URLError: <urlopen error [Errno 111] Connection refused>"
    )
    assert codes(nop=SOUND["nop"], oracle=[run("oracle", 0.0, verifier_output=refused)] * N) == {C.FALSE_REJECTION}
    outside = "curl: (7) Failed to connect to pypi.org port 443 after 2 ms: Connection refused"
    assert infra_finding(oracle=[run("oracle", 0.0, verifier_output=outside)] * N).evidence["kind"] == "network"


def test_tls_failure_to_an_outside_host_is_infra_and_to_localhost_is_not():
    outside = (
        "Could not fetch URL https://pypi.org/simple/pytest/: There was a problem confirming the ssl certificate: "
        "HTTPSConnectionPool(host='pypi.org', port=443): Max retries exceeded with url: /simple/pytest/ (Caused by "
        "SSLError(SSLCertVerificationError(1, '[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: self "
        "signed certificate in certificate chain (_ssl.c:1129)'))) - skipping"
    )
    finding = infra_finding(oracle=[run("oracle", 0.0, verifier_output=outside)] * N)
    assert finding.evidence["kind"] == "network" and "pypi.org" in finding.message
    local = "* Connected to localhost (127.0.0.1) port 8443\ncurl: (60) SSL certificate problem: self-signed cert"
    assert codes(nop=SOUND["nop"], oracle=[run("oracle", 0.0, verifier_output=local)] * N) == {C.FALSE_REJECTION}


def test_a_failed_sandbox_is_infra():
    error = "docker could not run ['bash', '-c', 'test.sh'] in qaflow-x: 409 Conflict: container is not running"
    died = [run("oracle", None, exit_status="error", error_kind="sandbox", error=error)] * N
    assert infra_finding(oracle=died).evidence["kind"] == "sandbox"
    oom = "\n[qaflow] the sandbox died during this command (the out-of-memory killer)\n"
    killed = [run("oracle", 0.0, agent_exit=137, agent_output="working..." + oom)] * N
    finding = infra_finding(oracle=killed)
    assert finding.evidence["kind"] == "sandbox" and finding.evidence["phase"] == "solution"
    note = "the bwrap backend cannot keep processes running after an exec; use the docker backend"
    service = [run("oracle", 0.0, verifier_output="Connection refused", services_left=1, verifier_note=note)] * N
    finding = infra_finding(oracle=service)
    assert (finding.evidence["kind"], finding.evidence["line"]) == ("sandbox", note)
    crashed = [run("oracle", None, exit_status="error", error_kind="reward_missing", error="no reward file")] * N
    assert codes(nop=SOUND["nop"], oracle=crashed) == {C.FALSE_REJECTION}


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


def test_an_effect_the_sandbox_failed_to_record_is_infra_error_not_silence():
    # issue 41, item 2: a container paused while the oracle's effect was listed left the oracle "ok, 1.0" and
    # every probe built on the effect skipped without a word: the task ended `accepted`
    from qaflow.audit.judge import effect_lost
    from qaflow.trial.effects import Effect

    paused = Effect(error="could not list the sandbox after the agent: the sandbox died (paused from outside qaflow)")
    stalled = Effect(error="listing after the agent failed (timed out)")
    for effect in (paused, stalled):
        (finding,) = effect_lost([run("oracle", 1.0, effect=effect)])
        assert finding.code is FindingCode.INFRA_ERROR and finding.severity is Severity.ERROR
        assert effect.error is not None and effect.error in finding.message and "did not run" in finding.message
    task_broke_it = Effect(error="the state folder /tmp/x is gone (did the agent clear /tmp?)")
    assert effect_lost([run("oracle", 1.0, effect=task_broke_it)]) == []
    assert effect_lost([run("oracle", 0.0, effect=paused)]) == []  # a failing oracle is judged on its own


def test_an_exploit_run_whose_reward_was_forged_is_reward_tamper():
    from qaflow.audit.exploits import Exploit
    from qaflow.audit.judge import judge_exploits

    why = "/logs/verifier/reward.txt was written by a process test.sh no longer owned (pid 7: python3 -c x)"
    forged = run("exploit:planted", None, error_kind="reward_forged", error=why)
    findings = judge_exploits([run("nop", 0.0)], [forged], [Exploit(name="planted")], "t")
    assert [f.code for f in findings] == [FindingCode.REWARD_TAMPER]
    assert "python3 -c x" in findings[0].message
