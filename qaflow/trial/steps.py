"""Multi-step trials (`[[steps]]`, README "The trial"): one sandbox, the steps in order in it.

Per step: upload `steps/<name>/workdir/` to the WORKDIR and run its `setup.sh` there as the step's
agent user, then the step's healthcheck if it has one (a failure of either is a `setup_failed`
error); the agent phase on the step (`StepTask`: the step's instruction, solution, timeout and
user); the verifier phase (`trial.verifier_phase`) with the task-level tests/ then the step's
tests/ as /tests and `[steps.verifier]` over `[verifier]`. After a verifier that ran in the sandbox
itself, /tests and /logs/verifier are emptied, so the next step's agent sees neither. A step with
an error or without a reward ends the trial, and so does one whose reward misses its `min_reward`.
The trial's fields are the steps' roll-up (`roll_up_into`).
"""

from __future__ import annotations

import time

from qaflow.agents.base import Agent
from qaflow.errors import TaskError
from qaflow.healthcheck import SetupError, wait_healthy
from qaflow.models.trial import ErrorInfo, ErrorKind, ExitStatus, StepResult, TrialResult, VerifierSandbox
from qaflow.sandbox import make_log_dirs
from qaflow.sandbox.base import ExecResult, Sandbox, SandboxSpec
from qaflow.task import Task
from qaflow.task_steps import StepTask, step_tasks
from qaflow.trial.hooks import TrialHooks, hooked_phases
from qaflow.trial.phases import TESTS_DIR, VERIFIER_LOGS, VerifierPlan
from qaflow.trial.step_rewards import min_reward_failure, roll_up

SETUP_SCRIPT = "setup.sh"


def run_steps(
    task: Task,
    agent: Agent,
    box: Sandbox,
    spec: SandboxSpec,
    result: TrialResult,
    *,
    clear: bool,
    last_step: str | None,
    hooks: TrialHooks | None = None,
) -> None:
    """Run the steps of `task` (up to `last_step`) in `box`, appending a `StepResult` per step to `result`;
    `hooks` apply to the last of them."""
    steps = step_tasks(task)
    if last_step is not None:
        names = [s.step_name for s in steps]
        if last_step not in names:
            raise TaskError(task.path / "task.toml", f"no step named {last_step!r}")
        steps = steps[: names.index(last_step) + 1]
    for position, step in enumerate(steps):
        more = position < len(steps) - 1
        hooked = hooks if not more and hooks is not None else TrialHooks()
        outcome = _run_step(step, agent, box, spec, clear=clear, more=more, backend=result.backend, hooks=hooked)
        result.steps.append(outcome)
        stop = _stop_reason(step, outcome)
        if stop is not None and position < len(steps) - 1:
            outcome.aborted = stop
            break
    roll_up_into(task, result, planned=len(steps))


def _run_step(
    step: StepTask,
    agent: Agent,
    box: Sandbox,
    spec: SandboxSpec,
    *,
    clear: bool,
    more: bool,
    backend: str,
    hooks: TrialHooks,
) -> StepResult:
    """One step in `box` (`more`: another step follows); failures are recorded on the result, never raised."""
    started = time.perf_counter()
    outcome = StepResult(name=step.step_name)
    setup_exec: ExecResult | None = None
    try:
        setup_exec = _prepare(step, box)
        outcome.timings["setup"] = time.perf_counter() - started
        hooked_phases(step, agent, box, spec, step_plan(step), outcome, hooks=hooks, clear=clear, backend=backend)
        if more and outcome.verifier_sandbox is VerifierSandbox.SHARED:
            box.kill_strays(clear=[TESTS_DIR, VERIFIER_LOGS])  # the verifier's leftovers are dead already
            make_log_dirs(box)  # the next step's agent finds an empty /logs/verifier, as under Harbor
    except SetupError as exc:
        outcome.error = ErrorInfo.of(exc).model_copy(update={"kind": ErrorKind.SETUP})
        setup_exec = exc.exec_result or setup_exec
    except Exception as exc:  # recorded like run_trial records it: with its kind and traceback
        outcome.error = ErrorInfo.of(exc)
    if outcome.error is not None and outcome.exit_status is ExitStatus.OK:
        outcome.exit_status = ExitStatus.ERROR
    outcome.timings["total"] = time.perf_counter() - started
    outcome.setup_exec = setup_exec
    return outcome


def _prepare(step: StepTask, box: Sandbox) -> ExecResult | None:
    """Upload the step's workdir/, run its setup.sh (cwd WORKDIR, the step's agent user), then its healthcheck."""
    user = step.config.agent.user
    setup: ExecResult | None = None
    if step.workdir_dir.is_dir():
        box.put(box.workdir, step.workdir_dir)
        if (step.workdir_dir / SETUP_SCRIPT).is_file():
            script = f"{box.workdir.rstrip('/')}/{SETUP_SCRIPT}"
            setup = box.exec(["bash", script], timeout=step.agent_timeout_sec, user=user, cwd=box.workdir)
            if not setup.ok:
                why = f"timed out ({step.agent_timeout_sec:g} s)" if setup.timed_out else f"exited {setup.exit_code}"
                tail = (setup.stderr or setup.stdout).strip()[-400:]
                reason = f"step {step.step_name!r}: workdir/{SETUP_SCRIPT} {why}" + (f": {tail}" if tail else "")
                raise SetupError(step.workdir_dir / SETUP_SCRIPT, reason, setup)
    _healthcheck(step, box)
    return setup


def _healthcheck(step: StepTask, box: Sandbox) -> None:
    if step.healthcheck is not None:
        toml = step.path / "task.toml"
        wait_healthy(box, step.healthcheck, user=step.config.agent.user, toml=toml, what=f"step {step.step_name!r}")


def step_plan(step: StepTask) -> VerifierPlan:
    """The step's verifier: task-level tests/ then the step's, `[steps.verifier]` over `[verifier]`."""
    verifier = step.config.verifier
    return VerifierPlan(
        tests=step.test_folders,
        timeout_sec=step.verifier_timeout_sec,
        env=dict(verifier.env or {}),
        user=verifier.user,
        mode=step.verifier_mode,
        network=step.config.verifier_network(),
        separate_context=step.separate_context,
    )


def _stop_reason(step: StepTask, outcome: StepResult) -> str | None:
    """Why no later step may run after `outcome` (an error, no reward, `min_reward` missed), or None."""
    if outcome.error is not None:
        return f"{outcome.error.kind.value} in step {step.step_name!r}"
    if outcome.rewards is None:
        return f"step {step.step_name!r} gave no reward ({outcome.exit_status.value})"
    failure = min_reward_failure(outcome.rewards, step.step.min_reward)
    return None if failure is None else f"step {step.step_name!r}: {failure}"


def roll_up_into(task: Task, result: TrialResult, *, planned: int) -> None:
    """The trial's fields from its steps: reward by the task's strategy (full only when every planned step
    ran and gave a reward), the first step's error and non-ok exit status, the last step's execs."""
    steps = result.steps
    reward = roll_up(steps, task.config.multi_step_reward_strategy)
    if reward is not None:
        result.reward, result.rewards, result.reward_source = reward.value, reward.values, reward.source
        complete = len(steps) == planned and all(s.rewards is not None and s.error is None for s in steps)
        result.full_reward = reward.full and complete
    result.exit_status = next((s.exit_status for s in steps if s.exit_status is not ExitStatus.OK), ExitStatus.OK)
    result.error = next((s.error for s in steps if s.error is not None), None)
    last = steps[-1]
    result.agent_exec, result.verifier_exec = last.agent_exec, last.verifier_exec
    result.verifier_sandbox, result.services_left = last.verifier_sandbox, last.services_left
    result.verifier_note = next((s.verifier_note for s in steps if s.verifier_note), None)
    for phase in ("agent", "verifier"):
        spent = [s.timings[phase] for s in steps if phase in s.timings]
        if spent:
            result.timings[phase] = sum(spent)
    for s in steps:
        for key, count in s.strays_killed.items():
            result.strays_killed[key] = result.strays_killed.get(key, 0) + count
