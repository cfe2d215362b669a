"""One step of a multi-step task (`[[steps]]`) as a task of its own (README, "The trial").

`StepTask` is what an agent is given at each step: a `Task` whose instruction, solution folder,
agent timeout and user are the step's (`[steps.agent]` over `[agent]`), so every agent written for
a single-step task (nop, oracle, the coding agent, the audit's probes) plays a step unchanged.
The step's verifier side (tests folders, `[steps.verifier]` over `[verifier]`) is here too, as
plain values; the trial turns them into a `VerifierPlan` (`qaflow.trial.steps`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

from qaflow.task import AgentConfig, StepConfig, Task, TaskConfig, VerifierConfig, VerifierEnvironmentMode

DEFAULT_TIMEOUT_S = 600.0
_Phase = TypeVar("_Phase", AgentConfig, VerifierConfig)


class StepTask(Task):
    """Step `index` of a multi-step task; `root` is the whole task's config."""

    step: StepConfig
    index: int
    count: int
    root: TaskConfig

    @property
    def step_name(self) -> str:
        return self.step.name

    @property
    def is_last(self) -> bool:
        return self.index == self.count - 1

    @property
    def step_dir(self) -> Path:
        return self.path / "steps" / self.step.name

    @property
    def solution_dir(self) -> Path:
        return self.step_dir / "solution"

    @property
    def tests_dir(self) -> Path:
        """The step's own tests/ (the task-level tests/ goes under it: `test_folders`)."""
        return self.step_dir / "tests"

    @property
    def workdir_dir(self) -> Path:
        """Uploaded to the image's WORKDIR before the step's agent runs."""
        return self.step_dir / "workdir"

    @property
    def test_folders(self) -> list[Path]:
        """What becomes /tests, in upload order: the task-level tests/, then the step's (its files win)."""
        return [d for d in (self.path / "tests", self.tests_dir) if d.is_dir()]

    @property
    def separate_context(self) -> Path:
        """The build context of a separate verifier: the step's tests/ when it has a Dockerfile, else the task's."""
        for folder in (self.tests_dir, self.path / "tests"):
            if (folder / "Dockerfile").is_file():
                return folder
        return self.tests_dir

    @property
    def verifier_mode(self) -> VerifierEnvironmentMode:
        """The step's `environment_mode`, else the task's (as a single-step task resolves it)."""
        if self.step.verifier.environment_mode is not None:
            return self.step.verifier.environment_mode
        if self.root.verifier.environment_mode is not None:
            return self.root.verifier.environment_mode
        has_dockerfile = any((d / "Dockerfile").is_file() for d in (self.tests_dir, self.path / "tests"))
        return VerifierEnvironmentMode.SEPARATE if has_dockerfile else VerifierEnvironmentMode.SHARED

    @property
    def healthcheck(self) -> dict[str, Any] | None:
        """`[steps.healthcheck]` (Harbor): run after setup.sh, before the agent."""
        extra = self.step.model_extra or {}
        check = extra.get("healthcheck")
        return check if isinstance(check, dict) else None


def _overlay(base: _Phase, step: _Phase) -> _Phase:
    """`base` with the fields the step sets explicitly (a step's unset timeout is not its 600 s default)."""
    return base.model_copy(update=step.model_dump(exclude_unset=True, exclude={"env"}))


def step_tasks(task: Task) -> list[StepTask]:
    """The steps of a multi-step task, in order, each as a `StepTask` (empty for a single-step task)."""
    steps = task.config.steps or []
    out = []
    for index, step in enumerate(steps):
        root = task.config
        agent = _overlay(root.agent, step.agent)
        verifier = _overlay(root.verifier, step.verifier)
        verifier.env = {**root.verifier.env, **step.verifier.env}
        if "timeout_sec" not in step.verifier.model_fields_set:
            verifier.timeout_sec = root.verifier.timeout_sec or DEFAULT_TIMEOUT_S
        config = root.model_copy(update={"agent": agent, "verifier": verifier, "steps": None})
        instruction = (task.path / "steps" / step.name / "instruction.md").read_text(encoding="utf-8")
        out.append(
            StepTask(
                path=task.path,
                config=config,
                instruction=instruction,
                version=task.version,
                env_hash=task.env_hash,
                step=step,
                index=index,
                count=len(steps),
                root=root,
            )
        )
    return out
