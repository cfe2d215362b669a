"""Harbor's runtime semantics that public tasks rely on: the image's ENTRYPOINT starts the
environment's services, `[environment.healthcheck]` waits for them, `[environment] workdir` moves
the working directory, and BuildKit-only `COPY --chmod` builds on docker's legacy builder."""

from __future__ import annotations

from pathlib import Path

import pytest

from qaflow.agents import NopAgent, OracleAgent
from qaflow.audit.judge import judge
from qaflow.audit.probe_run import ProbeRun
from qaflow.harden.observe import observe
from qaflow.models.records import FindingCode
from qaflow.models.trial import ErrorKind
from qaflow.sandbox.docker.images import without_buildkit_copy_flags
from qaflow.task import Task
from qaflow.trial import run_trial
from tests.conftest import require_backend
from tests.taskfactory import write_task

ENTRYPOINT = (
    "#!/bin/sh\nmkdir -p /srv && echo ready > /srv/status\n"
    "(sleep 1; python3 -m http.server 8080 --bind 127.0.0.1 --directory /srv >/dev/null 2>&1) &\n"
    'exec "$@"\n'
)
"""An environment whose own service comes up a second after the container starts."""
SERVICE_DOCKERFILE = (
    "FROM python:3.11-slim\nWORKDIR /app\nCOPY --chmod=755 entrypoint.sh /entrypoint.sh\n"
    'ENTRYPOINT ["/entrypoint.sh"]\n'
)
FETCH = "python3 -c \"import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:8080/status').read().decode().strip())\""
HEALTHCHECK = (
    "\n[environment.healthcheck]\n"
    f"command = '''{FETCH}'''\n"
    "interval_sec = 0.2\ntimeout_sec = 5\nstart_period_sec = 5\nstart_interval_sec = 0.2\nretries = 3\n"
)


def _service_task(tmp_path: Path, healthcheck: str = HEALTHCHECK) -> Task:
    root = write_task(
        tmp_path,
        solve_sh=f"#!/bin/bash\n{FETCH} > /app/out.txt\n",
        test_sh=(
            "#!/bin/bash\nmkdir -p /logs/verifier\n"
            'if [ "$(cat /app/out.txt 2>/dev/null)" = ready ]; then echo 1; else echo 0; fi'
            " > /logs/verifier/reward.txt\n"
        ),
        dockerfile=SERVICE_DOCKERFILE,
        toml_extra=healthcheck,
        instruction="The environment serves its status on http://127.0.0.1:8080/status; write it to /app/out.txt.\n",
        files={"environment/entrypoint.sh": ENTRYPOINT},
    )
    return Task.load(root)


@pytest.mark.docker
def test_the_entrypoint_starts_services_and_the_healthcheck_waits_for_them(tmp_path: Path):
    require_backend("docker")
    task = _service_task(tmp_path)
    oracle = run_trial(task, OracleAgent(), backend="docker")
    assert (oracle.error, oracle.reward) == (None, 1.0), oracle
    assert oracle.timings["setup"] >= 1.0, "the agent started before the environment's service was up"
    assert oracle.verifier_sandbox == "view", "the environment's service kept running for the verifier"
    nop = run_trial(task, NopAgent(), backend="docker")
    assert (nop.error, nop.reward) == (None, 0.0)


@pytest.mark.docker
def test_a_healthcheck_that_never_passes_is_a_setup_error_and_build_failed(tmp_path: Path):
    require_backend("docker")
    never = HEALTHCHECK.replace(FETCH.replace("'", "\\'"), "false").replace(FETCH, "false")
    task = _service_task(tmp_path, never.replace("start_period_sec = 5", "start_period_sec = 0"))
    result = run_trial(task, OracleAgent(), backend="docker")
    assert result.error is not None and result.error.kind is ErrorKind.SETUP, result
    assert "healthcheck 'false' failed 3 times" in result.error.message
    assert result.agent_exec is None and result.reward is None
    runs = [ProbeRun.of("oracle", i, result) for i in range(3)]
    findings = judge(nop=[ProbeRun.of("nop", 0, result)], oracle=runs)
    assert [f.code for f in findings] == [FindingCode.BUILD_FAILED]
    assert "did not come up" in findings[0].message


@pytest.mark.docker
def test_environment_workdir_moves_the_working_directory(tmp_path: Path):
    require_backend("docker")
    root = write_task(
        tmp_path,
        dockerfile="FROM python:3.11-slim\nRUN mkdir -p /work/here\n",
        toml_extra='\n[environment]\nworkdir = "/work/here"\n',
        solve_sh="#!/bin/bash\npwd > where.txt\n",
        test_sh=(
            "#!/bin/bash\nmkdir -p /logs/verifier\n"
            '[ "$(cat /work/here/where.txt)" = /work/here ] && echo 1 > /logs/verifier/reward.txt'
            " || echo 0 > /logs/verifier/reward.txt\n"
        ),
    )
    result = run_trial(Task.load(root), OracleAgent(), backend="docker")
    assert (result.error, result.reward) == (None, 1.0), result


def test_buildkit_copy_flags_become_plain_copies_and_a_chmod(tmp_path: Path):
    (tmp_path / "bin").mkdir()
    text = (
        "FROM x\nCOPY --chmod=755 run.sh /run.sh\nUSER app\nCOPY --link --chown=app --chmod=0640 a.txt bin /opt/\n"
        'COPY ["j.sh", "/j.sh"]\nRUN echo --chmod=1\n'
    )
    assert without_buildkit_copy_flags(text, tmp_path) == (
        "FROM x\nCOPY run.sh /run.sh\nRUN chmod 755 /run.sh\nUSER app\nCOPY --chown=app a.txt bin /opt/\n"
        "USER root\nRUN chmod -R 0640 /opt/a.txt /opt/bin\nUSER app\n"
        'COPY ["j.sh", "/j.sh"]\nRUN echo --chmod=1\n'
    )


@pytest.mark.docker
def test_hardening_observes_the_oracle_after_the_environment_is_up(tmp_path: Path):
    """Hardening's observation opens the task's sandbox as a trial does: the healthcheck first, so a reference
    solution that needs the environment's service finds it (it started too early and failed before)."""
    require_backend("docker")
    seen = observe(_service_task(tmp_path), backend="docker")
    assert seen.oracle_exit == 0, seen.oracle_output
    assert seen.contents["out.txt"].strip() == b"ready"
