"""The trial: how any agent, oracle or probe runs a task (DESIGN.md, "The trial").

1. a fresh sandbox from the task image; 2. the agent phase; 3. kill every process the agent
left running, remove whatever the agent put at /tests and in /logs/verifier, upload tests/, run
test.sh under the verifier timeout; 4. kill every process still running (nothing may write
after test.sh ends), then read the reward (reward.json first, else reward.txt). A trial always
returns a `TrialResult`: failures become data with their type, message and traceback, never a
silent reward.
"""

from __future__ import annotations

import tempfile
import time
import traceback
import uuid
from enum import StrEnum
from pathlib import Path

from pydantic import BaseModel, Field

from qaflow.agents.base import Agent
from qaflow.errors import BuildError, QaflowError, RewardError, SandboxError, TaskError, UnsupportedError
from qaflow.reward import Reward, read_reward
from qaflow.sandbox import Limits, open_sandbox, resolve_backend
from qaflow.sandbox.base import ExecResult, Sandbox, SandboxSpec
from qaflow.sandbox.spec import spec_for_task
from qaflow.task import Task, VerifierEnvironmentMode, tree_hash

TESTS_DIR = "/tests"
VERIFIER_LOGS = "/logs/verifier"


class ExitStatus(StrEnum):
    OK = "ok"
    AGENT_TIMEOUT = "agent_timeout"
    VERIFIER_TIMEOUT = "verifier_timeout"
    ERROR = "error"


class ErrorKind(StrEnum):
    BUILD = "build_failed"
    REWARD = "reward_missing"
    UNSUPPORTED = "unsupported"
    SANDBOX = "sandbox"
    TASK = "invalid_task"
    INTERNAL = "internal"


class ErrorInfo(BaseModel):
    kind: ErrorKind
    type: str
    message: str
    traceback: str = ""

    @classmethod
    def of(cls, exc: BaseException) -> ErrorInfo:
        kinds: list[tuple[type[BaseException], ErrorKind]] = [
            (BuildError, ErrorKind.BUILD),
            (UnsupportedError, ErrorKind.UNSUPPORTED),
            (SandboxError, ErrorKind.SANDBOX),
            (RewardError, ErrorKind.REWARD),
            (TaskError, ErrorKind.TASK),
        ]
        kind = next((k for t, k in kinds if isinstance(exc, t)), ErrorKind.INTERNAL)
        return cls(
            kind=kind,
            type=type(exc).__name__,
            message=str(exc),
            traceback="".join(traceback.format_exception(exc)),
        )


class TrialResult(BaseModel):
    task: str
    version: str
    agent: str
    backend: str
    run_id: str
    reward: float | None = None
    rewards: dict[str, float] | None = None
    reward_source: str | None = None
    """reward.json or reward.txt: the file the reward was read from."""
    full_reward: bool = False
    exit_status: ExitStatus = ExitStatus.OK
    error: ErrorInfo | None = None
    agent_exec: ExecResult | None = None
    verifier_exec: ExecResult | None = None
    timings: dict[str, float] = Field(default_factory=dict)
    """Seconds per phase: setup (build + start), agent, verifier, total."""
    strays_killed: dict[str, int] = Field(default_factory=dict)
    """Processes still running after a phase (agent, verifier), killed before the next step."""


def run_trial(
    task: Task,
    agent: Agent,
    *,
    backend: str = "auto",
    run_id: str | None = None,
    limits: Limits | None = None,
    clear_verifier_logs: bool = True,
) -> TrialResult:
    """Run one trial of `agent` on `task` and return its result; never raises for task or sandbox failures.

    `clear_verifier_logs=False` leaves whatever the agent wrote in /logs/verifier in place, as a
    harness that does not clear it would: the tamper probe uses it to see whether the verifier
    overwrites a planted reward.
    """
    started = time.perf_counter()
    run_id = run_id or uuid.uuid4().hex[:12]
    result = TrialResult(task=task.name, version=task.version, agent=agent.name, backend=backend, run_id=run_id)
    try:
        if task.config.steps:
            raise UnsupportedError(f"{task.path}: multi-step tasks ([[steps]]) are not supported by the trial yet")
        spec = spec_for_task(task, run_id=run_id, defaults=limits)
        result.backend = resolve_backend(backend, spec.runtime)
        with open_sandbox(spec, result.backend) as box:
            result.timings["setup"] = time.perf_counter() - started
            _agent_phase(task, agent, box, result)
            if task.verifier_mode is VerifierEnvironmentMode.SEPARATE:
                result.strays_killed["agent"] = box.kill_strays()
                _verify_separately(task, box, spec, result)
            else:
                # One step: nothing the agent started survives, and what it left at /tests
                # (a planted conftest.py) or in /logs/verifier is gone before the tests arrive.
                clear = [TESTS_DIR, VERIFIER_LOGS] if clear_verifier_logs else [TESTS_DIR]
                result.strays_killed["agent"] = box.kill_strays(clear=clear)
                _verify(task, box, result, clear=clear_verifier_logs)
    except QaflowError as exc:
        result.error = ErrorInfo.of(exc)
    except Exception as exc:  # a bug of ours: recorded with its traceback, never passed off as a task failure
        result.error = ErrorInfo.of(exc)
    if result.error is not None and result.exit_status is ExitStatus.OK:
        result.exit_status = ExitStatus.ERROR
    result.timings["total"] = time.perf_counter() - started
    return result


def _agent_phase(task: Task, agent: Agent, box: Sandbox, result: TrialResult) -> None:
    t0 = time.perf_counter()
    result.agent_exec = agent.run(task, box)
    result.timings["agent"] = time.perf_counter() - t0
    if result.agent_exec is not None and result.agent_exec.timed_out:
        result.exit_status = ExitStatus.AGENT_TIMEOUT


def _verify(task: Task, box: Sandbox, result: TrialResult, *, clear: bool = True) -> None:
    """Upload tests/, run test.sh in `box` and read its reward.

    The caller has killed the agent's processes and emptied /tests (and /logs/verifier unless
    `clear` is False). Whatever test.sh leaves running is killed the moment it ends, before the
    reward is read: nothing writes /logs/verifier after the verifier.
    """
    t0 = time.perf_counter()
    box.put(TESTS_DIR, task.tests_dir)
    prepare = f"rm -rf {VERIFIER_LOGS} && mkdir -p {VERIFIER_LOGS}" if clear else f"mkdir -p {VERIFIER_LOGS}"
    script = f"{prepare} && exec bash {TESTS_DIR}/test.sh"
    result.verifier_exec = box.exec(
        script,
        timeout=task.verifier_timeout_sec,
        env=task.config.verifier.env,
        user=task.config.verifier.user,
        kill_strays_after=True,
    )
    result.strays_killed["verifier"] = result.verifier_exec.strays_killed
    try:
        if result.verifier_exec.timed_out:
            if result.exit_status is ExitStatus.OK:
                result.exit_status = ExitStatus.VERIFIER_TIMEOUT
            return
        with tempfile.TemporaryDirectory(prefix="qaflow-verifier-") as tmp:
            box.get_dir(VERIFIER_LOGS, Path(tmp))
            _set_reward(result, read_reward(Path(tmp)))
    finally:
        result.timings["verifier"] = time.perf_counter() - t0


def _verify_separately(task: Task, box: Sandbox, agent_spec: SandboxSpec, result: TrialResult) -> None:
    """`environment_mode = "separate"`: the verifier image comes from tests/Dockerfile, with the
    agent's final workdir copied in at the same path."""
    if not (task.tests_dir / "Dockerfile").is_file():
        raise TaskError(task.tests_dir / "Dockerfile", "separate verifier mode needs tests/Dockerfile")
    verifier_spec = agent_spec.model_copy(
        update={
            "context_dir": task.tests_dir,
            "env_hash": tree_hash(task.tests_dir),
            "docker_image": None,
            "network": task.config.verifier_network(),
        }
    )
    with tempfile.TemporaryDirectory(prefix="qaflow-workdir-") as tmp:
        workdir_copy = Path(tmp) / "work"  # the agent's strays are dead: nothing changes it mid-copy
        box.get_dir(box.workdir, workdir_copy)
        with open_sandbox(verifier_spec, result.backend) as verifier_box:
            verifier_box.put(box.workdir, workdir_copy)
            _verify(task, verifier_box, result)


def _set_reward(result: TrialResult, reward: Reward) -> None:
    result.reward = reward.value
    result.rewards = reward.values
    result.reward_source = reward.source
    result.full_reward = reward.full
