"""The phases of a trial (agent, verifier) and the verifier's plan; `qaflow.trial` runs them in order."""

from __future__ import annotations

import re
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, Field

from qaflow.agents.base import Agent
from qaflow.errors import RewardError, SandboxError, TaskError, UnsupportedError
from qaflow.models.trial import ExecResult, ExitStatus, PhaseResult, VerifierSandbox
from qaflow.reward import REWARD_FILES, Reward, in_range, reward_from_file
from qaflow.sandbox import open_sandbox
from qaflow.sandbox.base import Sandbox, SandboxSpec
from qaflow.task import Task, VerifierEnvironmentMode, tree_hash
from qaflow.trial.guard import GUARD_DIR, GUARD_FAILED, REPORT, GuardKit, GuardReport

TESTS_DIR = "/tests"
VERIFIER_LOGS = "/logs/verifier"
ARTIFACTS_DIR = "/logs/artifacts"


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
    trace: bool = False
    """Run the verifier under the guard's observe mode: it leaves a trace of every process in `GUARD_DIR`."""
    artifacts: list[str] = Field(default_factory=lambda: [ARTIFACTS_DIR])
    """Paths copied from the agent's sandbox into a separate verifier's, at the same place (Harbor:
    /logs/artifacts and the task's top-level `artifacts`)."""

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
            artifacts=[ARTIFACTS_DIR, *task.config.artifact_paths()],
        )


def agent_phase(task: Task, agent: Agent, box: Sandbox, result: PhaseResult) -> None:
    t0 = time.perf_counter()
    result.agent_exec = agent.run(task, box)
    result.timings["agent"] = time.perf_counter() - t0
    if result.agent_exec is not None and result.agent_exec.timed_out:
        result.exit_status = ExitStatus.AGENT_TIMEOUT


def verifier_phase(
    box: Sandbox, spec: SandboxSpec, plan: VerifierPlan, result: PhaseResult, *, clear: bool, backend: str
) -> None:
    """Step 3 and 4 of the trial, after the agent phase in `box`, by `plan`; sets the reward on `result`.

    Separate mode: the agent's processes are killed and its workdir copied into the verifier's own
    image. Shared mode: when nothing is left running, the verifier runs in `box` (cleared first);
    when processes are, in a view of `box` that shares its network but none of its files or
    processes (see the module doc). `clear=False` keeps what the agent wrote in /logs/verifier. `backend`
    opens a separate verifier's sandbox.
    """
    if plan.mode is VerifierEnvironmentMode.SEPARATE:
        result.verifier_sandbox = VerifierSandbox.SEPARATE
        result.strays_killed["agent"] = box.kill_strays()
        _verify_separately(box, spec, plan, result, backend)
        return
    paths = [TESTS_DIR, VERIFIER_LOGS, GUARD_DIR] if clear else [TESTS_DIR, GUARD_DIR]
    running = _verify(box, plan, result, clear=clear, settle=paths)
    result.services_left = running
    if not running:
        result.verifier_sandbox = VerifierSandbox.SHARED
        return
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


def _verify(
    box: Sandbox, plan: VerifierPlan, result: PhaseResult, *, clear: bool = True, settle: Sequence[str] | None = None
) -> int:
    """Upload the plan's tests, run test.sh in `box` under the reward guard and read its reward; return 0.

    The caller has emptied /tests and `GUARD_DIR` (and /logs/verifier unless `clear` is False) and
    nothing of the agent runs in `box`; or it passes those paths as `settle`, and then, when processes
    still run in `box`, nothing is done and their count is returned (`Sandbox.exec_when_settled`).
    Whatever test.sh leaves running is killed the moment it ends, before the reward is read, and a
    reward that a process test.sh no longer owned wrote is `RewardForgedError` (`qaflow.trial.guard`).
    """
    t0 = time.perf_counter()
    prepare = f"rm -rf {VERIFIER_LOGS} && mkdir -p {VERIFIER_LOGS}" if clear else f"mkdir -p {VERIFIER_LOGS}"
    with tempfile.TemporaryDirectory(prefix="qaflow-guard-") as scratch:
        kit = GuardKit.make(Path(scratch), observe=plan.trace)
        script = kit.command(f"{TESTS_DIR}/test.sh", VERIFIER_LOGS, prepare=prepare)
        uploads = [*((TESTS_DIR, folder) for folder in plan.tests), (GUARD_DIR, kit.folder)]
        if settle is not None:
            ran = box.exec_when_settled(
                script, clear=settle, uploads=uploads, timeout=plan.timeout_sec, env=plan.env, user=plan.user
            )
            if isinstance(ran, int):
                return ran
            result.verifier_exec = ran
        else:
            for path, folder in uploads:
                box.put(path, folder)
            result.verifier_exec = box.exec(
                script, timeout=plan.timeout_sec, env=plan.env, user=plan.user, kill_strays_after=True
            )
    ran = result.verifier_exec
    result.strays_killed["verifier"] = ran.strays_killed
    try:
        if ran.timed_out:
            if result.exit_status is ExitStatus.OK:
                result.exit_status = ExitStatus.VERIFIER_TIMEOUT
            return 0
        if ran.storage_exceeded:  # killed mid-run: whatever reward it left is not a finished verifier's
            raise RewardError("the verifier was killed at the sandbox's storage limit before it finished")
        found = box.read_first_text(GUARD_DIR, [REPORT])
        if found is None:
            _raise_if_not_started(ran)
        report = GuardReport.parse(found, kit.key, stderr=ran.stderr)
        result.strays_killed["verifier"] += report.killed
        report.check()
        _set_reward(result, in_range(reward_from_file(box.read_first_text(VERIFIER_LOGS, REWARD_FILES))))
    finally:
        result.timings["verifier"] = time.perf_counter() - t0
    return 0


_NOT_STARTED = re.compile(r"OCI runtime exec failed|reward_guard: .*")


def _raise_if_not_started(ran: ExecResult) -> None:
    """When the verifier's exec left no guard report because the sandbox could not start it (docker's runtime
    could not exec: a fork bomb holds every pid), the guard could not run, or the sandbox failed under the
    command (it died, or the exec ended without its wrapper's exit status), raise SandboxError with the line."""
    for line in (ran.stdout + "\n" + ran.stderr).splitlines():
        if ran.exit_code in (GUARD_FAILED, 126, 127) and _NOT_STARTED.search(line):
            raise SandboxError(f"the sandbox could not start the verifier (exit {ran.exit_code}): {line.strip()}")
    if ran.sandbox_died or ran.exit_code < 0:  # the exec's own wrapper never reported: the sandbox failed under it
        last = next((ln.strip() for ln in reversed(ran.stderr.splitlines()) if ln.strip()), "no output")
        raise SandboxError(f"the verifier's command ended without an exit status (the sandbox failed under it): {last}")


def _verify_separately(
    box: Sandbox, agent_spec: SandboxSpec, plan: VerifierPlan, result: PhaseResult, backend: str
) -> None:
    """`environment_mode = "separate"`: the verifier image comes from the plan's context (tests/Dockerfile),
    with the agent's final workdir and the plan's artifacts copied in at the same paths."""
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
        with open_sandbox(verifier_spec, backend) as verifier_box:
            verifier_box.put(box.workdir, workdir_copy)
            for n, path in enumerate(dict.fromkeys(plan.artifacts)):
                _copy_artifact(box, verifier_box, path, Path(tmp) / f"artifact-{n}")
            _verify(verifier_box, plan, result)


def _copy_artifact(box: Sandbox, verifier_box: Sandbox, path: str, scratch: Path) -> None:
    """Copy the file or folder `path` (if the agent's sandbox has it) to the same path in the verifier's."""
    try:
        verifier_box.put(path, box.get(path))
    except IsADirectoryError:
        box.get_dir(path, scratch)
        verifier_box.put(path, scratch)
    except (FileNotFoundError, SandboxError):  # not there, or nowhere the agent could write (bwrap)
        pass


def _set_reward(result: PhaseResult, reward: Reward) -> None:
    result.reward = reward.value
    result.rewards = reward.values
    result.reward_source = reward.source
    result.full_reward = reward.full
