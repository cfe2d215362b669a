"""Hooks into a single-step trial: what a probe adds to the trial without a trial of its own.

`run_trial` calls them in order: `wrap_agent` once the environment is up (before the agent phase),
`after_agent` before the verifier, `verifier_env` for the verifier's first run, and `after_verifier`
once it ran (before the verifier's plain reruns). In a multi-step trial they apply to its last step
(`last_step`, else the task's last): `task` is then that step (a `StepTask`) and `result` its
`StepResult`. The observe probe is such hooks (`qaflow.audit.observe.ObserveHooks`); the default hooks
change nothing. A hook that raises ends the trial (or the step) like any other failure of it: recorded
in the result, never a reward.
"""

from __future__ import annotations

from qaflow.agents.base import Agent
from qaflow.models.trial import PhaseResult
from qaflow.sandbox.base import Sandbox, SandboxSpec
from qaflow.task import Task
from qaflow.trial.phases import VerifierPlan, agent_phase, verifier_phase


class TrialHooks:
    """No-op hooks; subclass and override what a probe needs."""

    def wrap_agent(self, task: Task, box: Sandbox, agent: Agent) -> Agent:
        """The agent the trial runs (the environment is up, nothing of the agent ran yet)."""
        return agent

    def after_agent(self, task: Task, box: Sandbox, result: PhaseResult) -> None:
        """After the agent phase, before the verifier's."""

    def verifier_env(self) -> dict[str, str]:
        """Variables added to the verifier's environment for its first run (not its reruns)."""
        return {}

    def trace_verifier(self) -> bool:
        """Whether the verifier's first run leaves the guard's trace of every process (`GUARD_DIR`)."""
        return False

    def after_verifier(self, task: Task, box: Sandbox, plan: VerifierPlan, result: PhaseResult) -> None:
        """After the verifier's first run by `plan` (without `verifier_env`), with the agent's sandbox
        (`result.verifier_sandbox` says whether the verifier ran in it), before its reruns."""


def hooked_phases(
    task: Task,
    agent: Agent,
    box: Sandbox,
    spec: SandboxSpec,
    plan: VerifierPlan,
    result: PhaseResult,
    *,
    hooks: TrialHooks,
    clear: bool,
    backend: str,
) -> None:
    """The agent phase, then the verifier's by `plan`, with `hooks` around them (`qaflow.trial.hooks`): the
    sequence of a single-step trial and of each step of a multi-step one."""
    agent_phase(task, hooks.wrap_agent(task, box, agent), box, result)
    hooks.after_agent(task, box, result)
    first = plan.model_copy(update={"env": {**plan.env, **hooks.verifier_env()}, "trace": hooks.trace_verifier()})
    verifier_phase(box, spec, first, result, clear=clear, backend=backend)
    hooks.after_verifier(task, box, plan, result)
