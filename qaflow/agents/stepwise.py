"""An agent for one step of a multi-step task: the reference solution before it, `agent` at it."""

from __future__ import annotations

from qaflow.agents.base import Agent
from qaflow.agents.scripted import OracleAgent
from qaflow.errors import TaskError
from qaflow.sandbox.base import ExecResult, Sandbox
from qaflow.task import Task
from qaflow.task_steps import StepTask


class StepwiseAgent:
    """Plays `before` (default: the oracle) at the steps before `step` and `agent` at `step`; the trial
    stops after `step` (`run_trial(last_step=step)`). Probing a step this way asks what its verifier says
    about `agent`'s work on the state the earlier steps should leave."""

    def __init__(self, step: str, agent: Agent, before: Agent | None = None):
        self.step = step
        self.agent = agent
        self.before = before or OracleAgent()
        self.name: str = agent.name

    def run(self, task: Task, sandbox: Sandbox) -> ExecResult | None:
        if not isinstance(task, StepTask):
            raise TaskError(task.path / "task.toml", f"a probe of step {self.step!r} needs a multi-step task")
        if task.step_name == self.step:
            return self.agent.run(task, sandbox)
        return self.before.run(task, sandbox)
