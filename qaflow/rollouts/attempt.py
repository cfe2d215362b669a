"""One rollout attempt: the harness on a task in a fresh sandbox, then the verifier, as one record."""

from __future__ import annotations

from qaflow.agents.harness import CodingAgent, HarnessConfig
from qaflow.agents.tool_specs import TOOLS
from qaflow.llm import LLMConfig
from qaflow.llm.account import UsageAccount
from qaflow.models.rollout import SCRIPTED_KEY, Effort, RolloutRecord
from qaflow.models.trial import ExitStatus
from qaflow.pool import task_source
from qaflow.rollouts.changes import CHANGES_KEY, change_record, recording
from qaflow.rollouts.steps import join_trajectories, step_meta, steps_verifier_output
from qaflow.sandbox import Limits
from qaflow.sandbox.spec import RunNetwork
from qaflow.task import Task
from qaflow.trial import run_trial

VERIFIER_OUTPUT_CHARS = 20_000


def run_attempt(
    task: Task,
    llm_config: LLMConfig,
    *,
    effort: Effort = Effort.OFF,
    attempt: int = 0,
    round: int = 0,
    backend: str = "auto",
    harness: HarnessConfig | None = None,
    run_id: str | None = None,
    limits: Limits | None = None,
    source: str | None = None,
    account: UsageAccount | None = None,
    network: RunNetwork | None = None,
) -> RolloutRecord:
    """Run the coding agent once on `task` and return its full record; failures are data, never raised."""
    # the sampling seed's key leaves the model out: two checkpoints draw the same numbers for the same attempt
    key = f"{task.version}:{Effort(effort).value}:{attempt}:{round}"
    agent = CodingAgent(llm_config, effort, harness, account, attempt_key=key)
    recorder = recording(agent)
    result = run_trial(task, recorder, backend=backend, run_id=run_id, limits=limits, network=network)
    traj = join_trajectories(agent.trajectories) if result.steps else agent.trajectory
    verifier = result.verifier_exec
    verifier_output = ""
    if result.steps:
        verifier_output = steps_verifier_output(result, VERIFIER_OUTPUT_CHARS)
    elif verifier is not None:
        verifier_output = (verifier.stdout + ("\n" + verifier.stderr if verifier.stderr else ""))[
            -VERIFIER_OUTPUT_CHARS:
        ]
    error = None
    if result.error is not None:
        error = f"{result.error.kind.value}: {result.error.message}"
    elif traj.error is not None:
        error = traj.error
    return RolloutRecord(
        task=task.name,
        task_version=task.version,
        source=source or task_source(task.config),
        model=llm_config.model,
        effort=effort,
        attempt=attempt,
        round=round,
        agent=agent.name,
        messages=traj.messages,
        tools=TOOLS,
        usage=traj.usage,
        thinking_tokens=traj.thinking_tokens,
        turns=traj.turns,
        reward=result.reward,
        rewards=result.rewards,
        full_reward=result.full_reward,
        exit_status=ExitStatus(result.exit_status.value),
        stop_reason=traj.stop_reason,
        error=error,
        verifier_output=verifier_output,
        side_calls=traj.side_calls,
        timings=result.timings,
        backend=result.backend,
        run_id=result.run_id,
        meta={
            "tool_errors": traj.tool_errors,
            "cost_usd": traj.cost_usd,
            "task_path": str(task.path),
            "sampling": agent.sampling,
            CHANGES_KEY: change_record(recorder),
        }
        | ({"steps": step_meta(agent.trajectories, result)} if result.steps else {})
        | ({SCRIPTED_KEY: True} if llm_config.script is not None else {}),
    )
