"""The trial: how any agent, oracle or probe runs a task (README, "The trial").

1. a fresh sandbox from the task image; 2. the agent phase; 3. the verifier phase: remove whatever
the agent put at /tests and in /logs/verifier, upload tests/, run test.sh under the verifier
timeout; 4. kill every process still running (nothing may write after test.sh ends), then read the
reward (reward.json first, else reward.txt). A trial always returns a `TrialResult`: failures
become data with their type, message and traceback, never a silent reward.

Processes the agent phase left running (servers a task asks for) stay alive and reachable by the
verifier, without being able to touch it: when any are running, the verifier runs in a snapshot of
the sandbox (`Sandbox.verifier_view`: a copy of its files at that moment, sharing its network
namespace, none of its processes), with its own fresh /tests and /logs/verifier. When nothing is
left running the verifier runs in the sandbox itself, the cheaper path. A backend that cannot make
a view records why in `TrialResult.verifier_note`, and the leftovers are killed as before.
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
from qaflow.healthcheck import SetupError, wait_healthy
from qaflow.reward import Reward, read_reward
from qaflow.sandbox import Limits, open_sandbox, resolve_backend
from qaflow.sandbox.base import ExecResult, Sandbox, SandboxSpec
from qaflow.sandbox.spec import RunNetwork, spec_for_task
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
    SETUP = "setup_failed"
    """A multi-step task's step setup (workdir/setup.sh, healthcheck) failed."""
    INTERNAL = "internal"


class VerifierSandbox(StrEnum):
    SHARED = "shared"
    VIEW = "view"
    SEPARATE = "separate"


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


class StepResult(BaseModel):
    """One step of a multi-step trial: its phases and reward, as a trial records them."""

    name: str
    reward: float | None = None
    rewards: dict[str, float] | None = None
    reward_source: str | None = None
    full_reward: bool = False
    exit_status: ExitStatus = ExitStatus.OK
    error: ErrorInfo | None = None
    setup_exec: ExecResult | None = None
    """workdir/setup.sh, when the step has one."""
    agent_exec: ExecResult | None = None
    verifier_exec: ExecResult | None = None
    timings: dict[str, float] = Field(default_factory=dict)
    strays_killed: dict[str, int] = Field(default_factory=dict)
    verifier_sandbox: VerifierSandbox | None = None
    services_left: int = 0
    verifier_note: str | None = None
    aborted: str | None = None
    """Why no later step ran (an error, no reward, min_reward not met); None when the trial went on."""


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
    verifier_sandbox: VerifierSandbox | None = None
    """Where the verifier ran: in the sandbox itself, in a view of it (services left running), or separate."""
    services_left: int = 0
    """Processes the agent phase left running for the verifier (servers); 0 when none."""
    verifier_note: str | None = None
    """Why the verifier could not see what the agent left running, when it could not (a backend limit)."""
    steps: list[StepResult] = Field(default_factory=list)
    """A multi-step task's steps that ran, in order; the fields above are their roll-up (`qaflow.trial_steps`)."""


class VerifierPlan(BaseModel):
    """What one verifier run needs: which folders become /tests (later ones override earlier files),
    its timeout, environment and user, and where it runs."""

    model_config = {"arbitrary_types_allowed": True}

    tests: list[Path]
    timeout_sec: float
    env: dict[str, str] = Field(default_factory=dict)
    user: str | int | None = None
    mode: VerifierEnvironmentMode = VerifierEnvironmentMode.SHARED
    network: bool = False
    """Network for a separate verifier's sandbox (a shared verifier has the agent's)."""
    separate_context: Path | None = None
    """The build context of the verifier's own image (separate mode): the folder with its Dockerfile."""

    @classmethod
    def of(cls, task: Task) -> VerifierPlan:
        """The plan of a single-step task: tests/, [verifier] timeout, env and user, its mode."""
        return cls(
            tests=[task.tests_dir],
            timeout_sec=task.verifier_timeout_sec,
            env=dict(task.config.verifier.env or {}),
            user=task.config.verifier.user,
            mode=task.verifier_mode,
            network=task.config.verifier_network(),
            separate_context=task.tests_dir,
        )


def run_trial(
    task: Task,
    agent: Agent,
    *,
    backend: str = "auto",
    run_id: str | None = None,
    limits: Limits | None = None,
    clear_verifier_logs: bool = True,
    network: RunNetwork | None = None,
    last_step: str | None = None,
) -> TrialResult:
    """Run one trial of `agent` on `task` and return its result; never raises for task or sandbox failures.

    `clear_verifier_logs=False` leaves whatever the agent wrote in /logs/verifier in place, as a
    harness that does not clear it would: the tamper probe uses it to see whether the verifier
    overwrites a planted reward. `last_step` ends a multi-step trial after that step (audit probes).
    """
    started = time.perf_counter()
    run_id = run_id or uuid.uuid4().hex[:12]
    result = TrialResult(task=task.name, version=task.version, agent=agent.name, backend=backend, run_id=run_id)
    try:
        spec = spec_for_task(task, run_id=run_id, defaults=limits, network=network)
        result.backend = resolve_backend(backend, spec.runtime)
        with open_sandbox(spec, result.backend) as box:
            _environment_healthcheck(task, box)
            result.timings["setup"] = time.perf_counter() - started
            if task.config.steps:
                from qaflow.trial_steps import run_steps  # it builds on this module

                run_steps(task, agent, box, spec, result, clear=clear_verifier_logs, last_step=last_step)
            else:
                _agent_phase(task, agent, box, result)
                verifier_phase(box, spec, VerifierPlan.of(task), result, clear=clear_verifier_logs)
    except SetupError as exc:
        result.error = ErrorInfo.of(exc).model_copy(update={"kind": ErrorKind.SETUP})
    except QaflowError as exc:
        result.error = ErrorInfo.of(exc)
    except Exception as exc:  # a bug of ours: recorded with its traceback, never passed off as a task failure
        result.error = ErrorInfo.of(exc)
    if result.error is not None and result.exit_status is ExitStatus.OK:
        result.exit_status = ExitStatus.ERROR
    result.timings["total"] = time.perf_counter() - started
    return result


def _environment_healthcheck(task: Task, box: Sandbox) -> None:
    """`[environment.healthcheck]` (Harbor): the environment's own services are up before the agent starts.

    Raises:
        SetupError: it never passed.
    """
    check = task.config.environment.healthcheck
    if check:
        wait_healthy(box, check, user=task.config.agent.user, toml=task.path / "task.toml", what="[environment]")


def _agent_phase(task: Task, agent: Agent, box: Sandbox, result: TrialResult) -> None:
    t0 = time.perf_counter()
    result.agent_exec = agent.run(task, box)
    result.timings["agent"] = time.perf_counter() - t0
    if result.agent_exec is not None and result.agent_exec.timed_out:
        result.exit_status = ExitStatus.AGENT_TIMEOUT


def verifier_phase(box: Sandbox, spec: SandboxSpec, plan: VerifierPlan, result: TrialResult, *, clear: bool) -> None:
    """Step 3 and 4 of the trial, after the agent phase in `box`, by `plan`; sets the reward on `result`.

    Separate mode: the agent's processes are killed and its workdir copied into the verifier's own
    image. Shared mode: when nothing is left running, the verifier runs in `box` (cleared first);
    when processes are, in a view of `box` that shares its network but none of its files or
    processes (see the module doc). `clear=False` keeps what the agent wrote in /logs/verifier.
    """
    if plan.mode is VerifierEnvironmentMode.SEPARATE:
        result.verifier_sandbox = VerifierSandbox.SEPARATE
        result.strays_killed["agent"] = box.kill_strays()
        _verify_separately(box, spec, plan, result)
        return
    paths = [TESTS_DIR, VERIFIER_LOGS] if clear else [TESTS_DIR]
    running = box.settle(clear=paths)
    result.services_left = running
    if running:
        try:
            view = box.verifier_view()
        except UnsupportedError as exc:
            result.verifier_note = str(exc)
        else:
            result.verifier_sandbox = VerifierSandbox.VIEW
            with view:
                view.kill_strays(clear=paths)  # nothing runs in a fresh view: this empties the copied paths
                _verify(view, plan, result, clear=clear)
            return
        result.strays_killed["agent"] = box.kill_strays(clear=paths)
    result.verifier_sandbox = VerifierSandbox.SHARED
    _verify(box, plan, result, clear=clear)


def _verify(box: Sandbox, plan: VerifierPlan, result: TrialResult, *, clear: bool = True) -> None:
    """Upload the plan's tests, run test.sh in `box` and read its reward.

    The caller has emptied /tests (and /logs/verifier unless `clear` is False) and nothing of the
    agent runs in `box`. Whatever test.sh leaves running is killed the moment it ends, before the
    reward is read: nothing writes /logs/verifier after the verifier.
    """
    t0 = time.perf_counter()
    for folder in plan.tests:
        box.put(TESTS_DIR, folder)
    prepare = f"rm -rf {VERIFIER_LOGS} && mkdir -p {VERIFIER_LOGS}" if clear else f"mkdir -p {VERIFIER_LOGS}"
    script = f"{prepare} && exec bash {TESTS_DIR}/test.sh"
    result.verifier_exec = box.exec(
        script,
        timeout=plan.timeout_sec,
        env=plan.env,
        user=plan.user,
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


def _verify_separately(box: Sandbox, agent_spec: SandboxSpec, plan: VerifierPlan, result: TrialResult) -> None:
    """`environment_mode = "separate"`: the verifier image comes from the plan's context (tests/Dockerfile),
    with the agent's final workdir copied in at the same path."""
    context = plan.separate_context
    if context is None or not (context / "Dockerfile").is_file():
        where = (context or Path("tests")) / "Dockerfile"
        raise TaskError(where, "separate verifier mode needs tests/Dockerfile")
    verifier_spec = agent_spec.model_copy(
        update={
            "context_dir": context,
            "env_hash": tree_hash(context),
            "docker_image": None,
            "network": plan.network,
        }
    )
    with tempfile.TemporaryDirectory(prefix="qaflow-workdir-") as tmp:
        workdir_copy = Path(tmp) / "work"  # the agent's strays are dead: nothing changes it mid-copy
        box.get_dir(box.workdir, workdir_copy)
        with open_sandbox(verifier_spec, result.backend) as verifier_box:
            verifier_box.put(box.workdir, workdir_copy)
            _verify(verifier_box, plan, result)


def _set_reward(result: TrialResult, reward: Reward) -> None:
    result.reward = reward.value
    result.rewards = reward.values
    result.reward_source = reward.source
    result.full_reward = reward.full
