"""The reward is the one test.sh's own processes wrote (issue 41, item 1), on docker and bwrap.

Agent code that the verifier runs (here: a module test.sh imports) starts a process that outlives
its parent and writes a full reward: a loop that keeps rewriting both reward files, or a waiter that
replaces test.sh's own reward once and exits. The trial must say `reward_forged`, naming the writer,
never record the forged reward. A verifier that starts a server and leaves it running is not that.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from qaflow.agents import NopAgent, OracleAgent
from qaflow.agents.base import Agent
from qaflow.audit.judge import judge
from qaflow.audit.probe_run import ProbeRun
from qaflow.models.records import FindingCode
from qaflow.models.trial import ErrorKind, TrialResult
from qaflow.task import Task
from qaflow.trial import run_trial
from qaflow.trial.guard import GuardReport
from tests.fake_sandbox import Program
from tests.taskfactory import write_task

_LOOP = """
import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        for _ in range(600):
            for name, text in (("reward.txt", "1"), ("reward.json", '{"reward": 1}')):
                try:
                    with open("/logs/verifier/" + name, "w") as f:
                        f.write(text)
                except OSError:
                    pass
            time.sleep(0.005)
    os._exit(0)
"""
"""The forging loop: a detached grandchild of the process that imports the agent's module."""

_WAITER = """
import os, time
if os.fork() == 0:
    if os.fork() == 0:
        for _ in range(2000):
            try:
                with open("/logs/verifier/reward.txt") as f:
                    if f.read().strip() == "0":
                        break
            except OSError:
                pass
            time.sleep(0.002)
        with open("/logs/verifier/reward.txt", "w") as f:
            f.write("1")
        os._exit(0)
    os._exit(0)
"""
"""The forging waiter: waits for test.sh's own `0`, replaces it once with `1` and exits."""

_HOLDER = """
import os, time
fd = os.open("/logs/verifier/reward.txt", os.O_WRONLY | os.O_CREAT, 0o644)
if os.fork() == 0:
    if os.fork() == 0:
        for _ in range(2000):
            try:
                with open("/logs/verifier/reward.txt") as f:
                    if f.read().strip() == "0":
                        break
            except OSError:
                pass
            time.sleep(0.002)
        os.pwrite(fd, b"1", 0)
        os._exit(0)
    os._exit(0)
os.close(fd)
"""
"""The forging holder: opens reward.txt while still the verifier's, then a detached grandchild writes test.sh's
`0` over through that descriptor, opening nothing."""

_IMPORTS_AGENT_MODULE = (
    "#!/bin/bash\nmkdir -p /logs/verifier\n"
    "cd /app && python3 -c 'import helper'\n"
    "sleep 0.3\n"
    "echo 0 > /logs/verifier/reward.txt\n"
    "sleep 0.7\n"
)


def _trial(tmp_path: Path, backend: str, *, test: str, solve: str, agent: Agent | None = None) -> TrialResult:
    task = Task.load(write_task(tmp_path, name=f"g{uuid.uuid4().hex[:6]}", test_sh=test, solve_sh=solve))
    return run_trial(task, agent or OracleAgent(), backend=backend)


def _solve_writing(module: str) -> str:
    return f"#!/bin/bash\ncat > /app/helper.py <<'EOF'\n{module}\nEOF\n"


@pytest.mark.parametrize("forger", ["loop", "waiter", "holder"])
def test_a_reward_written_by_a_process_the_verifier_left_is_forged(backend: str, tmp_path: Path, forger: str):
    module = {"loop": _LOOP, "waiter": _WAITER, "holder": _HOLDER}[forger]
    result = _trial(tmp_path, backend, test=_IMPORTS_AGENT_MODULE, solve=_solve_writing(module))
    assert result.reward is None, f"the forged reward was recorded: {result.reward}"
    assert result.error is not None and result.error.kind is ErrorKind.REWARD_FORGED, result.error
    message = result.error.message  # the loop rewrites both reward files: the first write seen is named
    assert ("reward.txt" in message or "reward.json" in message) and "python3" in message, message
    run = ProbeRun.of("oracle", 0, result)
    findings = judge(nop=[], oracle=[run])
    tamper = [f for f in findings if f.code is FindingCode.REWARD_TAMPER]
    assert tamper and "python3" in tamper[0].message, findings
    assert not [f for f in findings if f.code is FindingCode.FALSE_REJECTION], findings


def test_a_verifier_that_leaves_its_server_running_keeps_its_reward(backend: str, tmp_path: Path):
    test = (
        "#!/bin/bash\nmkdir -p /logs/verifier\ncd /tmp\n"
        "python3 -m http.server 8765 --bind 127.0.0.1 >/dev/null 2>&1 &\n"
        "python3 - <<'EOF'\n"
        "import json, time, urllib.request\n"
        "for _ in range(100):\n"
        "    try:\n"
        "        urllib.request.urlopen('http://127.0.0.1:8765/', timeout=1).read(); break\n"
        "    except OSError:\n"
        "        time.sleep(0.05)\n"
        "else:\n"
        "    raise SystemExit('the server never answered')\n"
        "open('/logs/verifier/reward.json', 'w').write(json.dumps({'reward': 1, 'served': 1}))\n"
        "EOF\n"
    )
    result = _trial(tmp_path, backend, test=test, solve="#!/bin/bash\ntrue\n", agent=NopAgent())
    assert result.error is None, result.error
    assert result.rewards == {"reward": 1.0, "served": 1.0}
    assert result.strays_killed["verifier"] >= 1, result.strays_killed


def test_a_report_without_the_key_or_cut_short_is_not_trusted():
    good = "key k1\nwrite ok 12 /logs/verifier/reward.txt\tbash /tests/test.sh\nkilled 0\nend\n"
    assert GuardReport.parse(("report", good), "k1").writers[0].attached
    for text in (good.replace("k1", "k2"), good.removesuffix("end\n")):
        with pytest.raises(Exception, match="cannot tell who wrote the reward"):
            GuardReport.parse(("report", text), "k1")
    with pytest.raises(Exception, match="left no report"):
        GuardReport.parse(None, "k1")


_OCI = b"OCI runtime exec failed: exec failed: unable to start container process: read init-p: connection reset\n"


def test_a_verifier_the_sandbox_could_not_start_is_a_sandbox_error(
    fake_backend: str, fake_programs: dict[str, Program], tmp_path: Path
):
    # docker's runtime could not exec the verifier (a fork bomb the solution left holds every pid): exit 126
    # and the runtime's line, before anything of the verifier ran
    fake_programs["rm"] = lambda box, argv, stdin, env, cwd: (126, _OCI, b"")
    result = _trial(tmp_path, fake_backend, test=_IMPORTS_AGENT_MODULE, solve="#!/bin/bash\ntrue\n", agent=NopAgent())
    assert result.error is not None and result.error.kind is ErrorKind.SANDBOX, result.error
    assert "OCI runtime exec failed" in result.error.message and "exit 126" in result.error.message
    findings = judge(nop=[ProbeRun.of("nop", 0, result)], oracle=[])
    assert [f.code for f in findings] == [FindingCode.INFRA_ERROR], findings
