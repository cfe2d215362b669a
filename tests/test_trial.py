"""Trials on real sandboxes: the bundled pool, and every way a trial can go wrong. The tests whose task scripts
stay in the fake's shell subset (tests/fake_sandbox.py) also run on the in-memory fake (`any_backend`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from qaflow.agents import NopAgent, OracleAgent
from qaflow.cli import app
from qaflow.models.trial import ErrorKind, ExitStatus
from qaflow.task import Task
from qaflow.trial import TrialHooks, run_trial
from tests.conftest import TASKS_REPO
from tests.taskfactory import write_task

LABELS: dict[str, dict] = json.loads((TASKS_REPO / "labels.json").read_text())


def _controls() -> list[str]:
    """Bundled tasks labelled as controls (sound verifier, reference solution and environment).
    Controls that need the network at build time (`offline_codes`) are tested where the network is
    (tests/test_audit_labels.py)."""
    names = []
    for folder in sorted(TASKS_REPO.iterdir()):
        toml = folder / "task.toml"
        is_control = toml.is_file() and 'label = "control"' in toml.read_text(errors="replace")
        if is_control and "offline_codes" not in LABELS.get(folder.name, {}):
            names.append(folder.name)
    return names


BUNDLED = _controls()


def test_the_bundled_pool_has_at_least_six_controls():
    assert len(BUNDLED) >= 6


ON_DOCKER = BUNDLED[::3]
"""The controls docker trials too (CI's time): the labelled audits run every control's oracle and nop on bwrap
and a covering sample on docker as well."""


@pytest.mark.parametrize(
    ("backend", "name"),
    [
        *(pytest.param("docker", n, marks=pytest.mark.docker, id=f"docker-{n}") for n in ON_DOCKER),
        *(pytest.param("bwrap", n, marks=pytest.mark.bwrap, id=f"bwrap-{n}") for n in BUNDLED),
    ],
    indirect=["backend"],
)
def test_oracle_gets_full_reward_and_nop_gets_zero(backend: str, name: str):
    task = Task.load(TASKS_REPO / name)
    oracle = run_trial(task, OracleAgent(), backend=backend)
    assert oracle.error is None, oracle.error
    assert oracle.agent_exec is not None and oracle.agent_exec.exit_code == 0, oracle.agent_exec
    assert (oracle.reward, oracle.full_reward, oracle.exit_status) == (1.0, True, ExitStatus.OK)
    nop = run_trial(task, NopAgent(), backend=backend)
    assert nop.error is None, nop.error
    assert (nop.reward, nop.full_reward) == (0.0, False)
    assert {"setup", "agent", "verifier", "total"} <= set(oracle.timings)


def test_missing_reward_is_an_error_not_a_zero(any_backend: str, tmp_path: Path):
    backend = any_backend
    task = Task.load(write_task(tmp_path, test_sh="#!/bin/bash\necho verifier ran\n"))
    result = run_trial(task, OracleAgent(), backend=backend)
    assert result.reward is None
    assert result.error is not None and result.error.kind is ErrorKind.REWARD
    assert result.exit_status is ExitStatus.ERROR
    assert result.verifier_exec is not None and "verifier ran" in result.verifier_exec.stdout


def test_stale_reward_from_the_agent_phase_is_cleared(any_backend: str, tmp_path: Path):
    backend = any_backend
    solve = "#!/bin/bash\nmkdir -p /logs/verifier && echo 1 > /logs/verifier/reward.txt\n"
    task = Task.load(write_task(tmp_path, solve_sh=solve, test_sh="#!/bin/bash\ntrue\n"))
    result = run_trial(task, OracleAgent(), backend=backend)
    assert result.reward is None and result.error is not None and result.error.kind is ErrorKind.REWARD


def test_agent_timeout_is_reported_and_the_verifier_still_runs(any_backend: str, tmp_path: Path):
    backend = any_backend
    task = Task.load(write_task(tmp_path, solve_sh="#!/bin/bash\nsleep 60\n"))
    task.config.agent.timeout_sec = 1.0
    result = run_trial(task, OracleAgent(), backend=backend)
    assert result.exit_status is ExitStatus.AGENT_TIMEOUT
    assert result.agent_exec is not None and result.agent_exec.timed_out
    assert result.reward == 0.0
    assert result.timings["agent"] < 20


def test_verifier_timeout_is_reported(any_backend: str, tmp_path: Path):
    backend = any_backend
    task = Task.load(write_task(tmp_path, test_sh="#!/bin/bash\nsleep 60\n"))
    task.config.verifier.timeout_sec = 1.0
    result = run_trial(task, OracleAgent(), backend=backend)
    assert result.exit_status is ExitStatus.VERIFIER_TIMEOUT
    assert result.reward is None


def test_failing_solution_is_recorded_and_verified(any_backend: str, tmp_path: Path):
    backend = any_backend
    task = Task.load(write_task(tmp_path, solve_sh="#!/bin/bash\necho half > /app/out.txt\nexit 4\n"))
    result = run_trial(task, OracleAgent(), backend=backend)
    assert result.agent_exec is not None and result.agent_exec.exit_code == 4
    assert (result.reward, result.error) == (0.0, None)


def test_build_failure_is_an_error_with_the_log(any_backend: str, tmp_path: Path):
    backend = any_backend
    dockerfile = "FROM python:3.11-slim\nWORKDIR /app\nRUN echo about-to-fail && exit 3\n"
    task = Task.load(write_task(tmp_path, dockerfile=dockerfile))
    result = run_trial(task, OracleAgent(), backend=backend)
    assert result.error is not None and result.error.kind is ErrorKind.BUILD
    assert "about-to-fail" in result.error.message


def test_solution_and_verifier_env_and_task_env_reach_their_phases(any_backend: str, tmp_path: Path):
    backend = any_backend
    toml = '\n[solution.env]\nWORD = "done"\n\n[verifier.env]\nWANT = "done"\n'
    test_sh = (
        "#!/bin/bash\nmkdir -p /logs/verifier\n"
        '[ "$(cat /app/out.txt)" = "$WANT" ] && [ "$BASE" = env ] && echo 1 > /logs/verifier/reward.txt'
        " || echo 0 > /logs/verifier/reward.txt\n"
    )
    dockerfile = "FROM python:3.11-slim\nWORKDIR /app\nENV BASE=env\n"
    task = Task.load(
        write_task(
            tmp_path,
            toml_extra=toml,
            solve_sh='#!/bin/bash\necho "$WORD" > /app/out.txt\n',
            test_sh=test_sh,
            dockerfile=dockerfile,
        )
    )
    assert run_trial(task, OracleAgent(), backend=backend).reward == 1.0


def test_separate_verifier_sees_the_agent_workdir(any_backend: str, tmp_path: Path):
    backend = any_backend
    task_dir = write_task(
        tmp_path,
        files={"tests/Dockerfile": "FROM python:3.11-slim\nWORKDIR /app\nENV IN_VERIFIER_IMAGE=1\n"},
    )
    (task_dir / "tests" / "test.sh").write_text(
        "#!/bin/bash\nmkdir -p /logs/verifier\n"
        '[ "$(cat /app/out.txt)" = done ] && [ "$IN_VERIFIER_IMAGE" = 1 ] && echo 1 > /logs/verifier/reward.txt'
        " || echo 0 > /logs/verifier/reward.txt\n"
    )
    task = Task.load(task_dir)
    assert task.verifier_mode.value == "separate"
    result = run_trial(task, OracleAgent(), backend=backend)
    assert result.error is None, result.error
    assert result.reward == 1.0
    assert run_trial(task, NopAgent(), backend=backend).reward == 0.0


ARTIFACT_CHECKS = (
    '#!/bin/bash\nr=1\n[ "$(cat /logs/artifacts/mode.txt 2>/dev/null)" = agent ] || r=0\n'
    "[ -f /tmp/report/summary.txt ] && [ -f /tmp/one.txt ] || r=0\n"
    "[ -e /tmp/ambient.txt ] && r=0\necho $r > /logs/verifier/reward.txt\n"
)


def test_separate_verifier_gets_the_logs_artifacts_and_the_declared_artifacts(any_backend: str, tmp_path: Path):
    backend = any_backend
    """Harbor: /logs/artifacts and the task's top-level `artifacts` (a path, or {source = ...}; a file or a
    folder) travel to a separate verifier at the same paths; nothing else of the agent's sandbox does."""
    task_dir = write_task(
        tmp_path,
        test_sh=ARTIFACT_CHECKS,
        solve_sh=(
            "#!/bin/bash\nset -e\n[ -d /logs/verifier ] && [ -w /logs/artifacts ]\n"
            "echo agent > /logs/artifacts/mode.txt\n"
            "mkdir -p /tmp/report && echo ok > /tmp/report/summary.txt\necho 1 > /tmp/one.txt\n"
            "echo no > /tmp/ambient.txt\n"
        ),
        files={"tests/Dockerfile": "FROM python:3.11-slim\nWORKDIR /app\n"},
    )
    toml = task_dir / "task.toml"
    toml.write_text(
        'artifacts = ["/tmp/report", { source = "/tmp/one.txt" }, "/nowhere"]\n'
        + toml.read_text().replace("[verifier]\n", '[verifier]\nenvironment_mode = "separate"\n')
    )
    task = Task.load(task_dir)
    assert task.config.artifact_paths() == ["/tmp/report", "/tmp/one.txt", "/nowhere"]
    result = run_trial(task, OracleAgent(), backend=backend)
    assert result.error is None, result.error
    assert result.reward == 1.0
    assert run_trial(task, NopAgent(), backend=backend).reward == 0.0


def test_cli_run_prints_json(backend: str):
    runner = CliRunner()
    out = runner.invoke(app, ["run", str(TASKS_REPO / "csv-sum"), "--agent", "oracle", "--backend", backend, "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert (data["reward"], data["agent"], data["backend"]) == (1.0, "oracle", backend)


def test_tests_are_not_visible_during_the_agent_phase(any_backend: str, tmp_path: Path):
    backend = any_backend
    solve = "#!/bin/bash\nif [ -e /tests/test.sh ]; then echo leaked; else echo done; fi > /app/out.txt\n"
    task = Task.load(write_task(tmp_path, solve_sh=solve))
    assert run_trial(task, OracleAgent(), backend=backend).reward == 1.0


class _RecordingHooks(TrialHooks):
    """Records what each hook saw of the sandbox; the agent gets a variable, the verifier's first run another."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.seen: dict[str, str] = {}

    def wrap_agent(self, task, box, agent):
        self.calls.append("wrap_agent")
        self.seen["before_agent"] = box.exec("cat /app/out.txt 2>/dev/null || echo none", timeout=30).stdout.strip()
        return OracleAgent(extra_env={"WORD": "hooked"})

    def after_agent(self, task, box, result):
        self.calls.append("after_agent")
        self.seen["after_agent"] = box.exec("cat /app/out.txt", timeout=30).stdout.strip()

    def verifier_env(self):
        self.calls.append("verifier_env")
        return {"FIRST": "1"}

    def after_verifier(self, task, box, plan, result):
        self.calls.append("after_verifier")
        self.seen["reward_then"] = str(result.reward)


HOOKED_VERIFIER = (
    "#!/bin/bash\nmkdir -p /logs/verifier\n"
    '[ "$(cat /app/out.txt)" = hooked ] && [ "$FIRST" = 1 ] && echo 1 > /logs/verifier/reward.txt'
    " || echo 0 > /logs/verifier/reward.txt\n"
)
HOOKED_SOLUTION = '#!/bin/bash\necho "${WORD:-plain}" > /app/out.txt\n'


def test_hooks_wrap_the_agent_and_the_verifiers_first_run_in_order(any_backend: str, tmp_path: Path):
    """The verifier passes only with both hooks' variables (the agent's and the verifier's)."""
    task = Task.load(write_task(tmp_path, solve_sh=HOOKED_SOLUTION, test_sh=HOOKED_VERIFIER))
    hooks = _RecordingHooks()
    result = run_trial(task, OracleAgent(), backend=any_backend, hooks=hooks)
    assert hooks.calls == ["wrap_agent", "after_agent", "verifier_env", "after_verifier"]
    assert hooks.seen == {"before_agent": "none", "after_agent": "hooked", "reward_then": "1.0"}
    assert result.reward == 1.0
    assert run_trial(task, OracleAgent(), backend=any_backend).reward == 0.0


def test_the_verifiers_reruns_run_without_the_hooks_variables(backend: str, tmp_path: Path):
    """Real backends only: the reruns' script uses arithmetic expansion, which the fake's shell lacks."""
    task = Task.load(write_task(tmp_path, solve_sh=HOOKED_SOLUTION, test_sh=HOOKED_VERIFIER))
    result = run_trial(task, OracleAgent(), backend=backend, hooks=_RecordingHooks(), verifier_reruns=2)
    assert result.reward == 1.0 and result.reruns == [False, False]
    assert result.timings["reruns"] > 0


def test_a_hook_that_raises_ends_the_trial_as_an_error(any_backend: str, tmp_path: Path):
    class Broken(TrialHooks):
        def after_agent(self, task, box, result):
            raise RuntimeError("hook broke")

    result = run_trial(Task.load(write_task(tmp_path)), OracleAgent(), backend=any_backend, hooks=Broken())
    assert result.exit_status is ExitStatus.ERROR and "hook broke" in result.error.message
    assert result.reward is None and result.verifier_exec is None
