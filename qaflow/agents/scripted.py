"""The two agents with no model: nop (does nothing) and oracle (runs the reference solution)."""

from __future__ import annotations

from qaflow.errors import TaskError
from qaflow.sandbox.base import ExecResult, Sandbox
from qaflow.task import Task
from qaflow.task_steps import StepTask

SOLUTION_DIR = "/solution"


class NopAgent:
    """Leaves the environment untouched: a sound verifier must not give it full reward."""

    name = "nop"

    def run(self, task: Task, sandbox: Sandbox) -> ExecResult | None:
        return None


class OracleAgent:
    """Uploads `solution/` to /solution and runs `solve.sh` in the workdir under the agent timeout.

    At a step of a multi-step task (`StepTask`) that is the step's solution, which replaces the
    previous step's at /solution."""

    name = "oracle"

    def __init__(self, extra_env: dict[str, str] | None = None):
        self.extra_env = extra_env or {}
        """Set on top of the task's `[solution] env` (the audit's observer)."""

    def run(self, task: Task, sandbox: Sandbox) -> ExecResult | None:
        script = task.solution_dir / "solve.sh"
        if not script.is_file():
            raise TaskError(script, "the oracle needs solution/solve.sh")
        if isinstance(task, StepTask) and task.index > 0:
            sandbox.exec(f"[ ! -d {SOLUTION_DIR} ] || find {SOLUTION_DIR} -mindepth 1 -delete", timeout=60, user="0")
        sandbox.put(SOLUTION_DIR, task.solution_dir)
        return sandbox.exec(
            ["bash", f"{SOLUTION_DIR}/solve.sh"],
            timeout=task.agent_timeout_sec,
            env={**task.config.solution.env, **self.extra_env},
            user=task.config.agent.user,
        )


_AGENTS: dict[str, type[NopAgent | OracleAgent]] = {"nop": NopAgent, "oracle": OracleAgent}


def agent_by_name(name: str) -> NopAgent | OracleAgent:
    if name not in _AGENTS:
        raise ValueError(f"unknown agent {name!r}; choose one of {sorted(_AGENTS)}")
    return _AGENTS[name]()
