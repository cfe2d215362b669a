"""The trial: how any agent, oracle or probe runs a task (README, "The trial").

1. a fresh sandbox from the task image; 2. the agent phase; 3. the verifier phase: remove whatever
the agent put at /tests and in /logs/verifier, upload tests/, run test.sh under the verifier
timeout and the reward guard (`qaflow.trial.guard`); 4. kill every process still running (nothing
may write after test.sh ends), check that only test.sh's own processes wrote the reward (else
`reward_forged`), then read it (reward.json first, else reward.txt). A trial always returns a `TrialResult`: failures
become data with their type, message and traceback, never a silent reward.

Processes the agent phase left running (servers a task asks for) stay alive and reachable by the
verifier, without being able to touch it: when any are running, the verifier runs in a snapshot of
the sandbox (`Sandbox.verifier_view`: a copy of its files at that moment, sharing its network
namespace, none of its processes), with its own fresh /tests and /logs/verifier. When nothing is
left running the verifier runs in the sandbox itself, the cheaper path. A backend that cannot make
a view records why in `TrialResult.verifier_note`, and the leftovers are killed as before.
"""

from __future__ import annotations

import time
import uuid

from qaflow.agents.base import Agent
from qaflow.errors import QaflowError
from qaflow.healthcheck import SetupError
from qaflow.models.trial import ErrorInfo, ErrorKind, ExitStatus, TrialResult, VerifierSandbox
from qaflow.sandbox import Limits
from qaflow.sandbox.spec import RunNetwork
from qaflow.task import Task
from qaflow.trial.hooks import TrialHooks, hooked_phases
from qaflow.trial.phases import TESTS_DIR, VERIFIER_LOGS, VerifierPlan
from qaflow.trial.reruns import rerun_after
from qaflow.trial.steps import run_steps
from qaflow.trial.task_sandbox import sandbox_plan, task_sandbox

__all__ = ["TESTS_DIR", "VERIFIER_LOGS", "TrialHooks", "VerifierPlan", "run_trial"]


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
    verifier_reruns: int = 0,
    hooks: TrialHooks | None = None,
) -> TrialResult:
    """Run one trial of `agent` on `task` and return its result; never raises for task or sandbox failures.

    `clear_verifier_logs=False` leaves whatever the agent wrote in /logs/verifier in place, as a
    harness that does not clear it would: the tamper probe uses it to see whether the verifier
    overwrites a planted reward. `last_step` ends a multi-step trial after that step (audit probes).
    `verifier_reruns` runs the verifier that many more times on the final state (`TrialResult.reruns`),
    when it ran in the sandbox itself and finished in time (single-step tasks). `hooks` add what a probe
    needs to the trial, or to its last step (`qaflow.trial.hooks`).
    """
    hooks = hooks or TrialHooks()
    started = time.perf_counter()
    run_id = run_id or uuid.uuid4().hex[:12]
    result = TrialResult(task=task.name, version=task.version, agent=agent.name, backend=backend, run_id=run_id)
    try:
        spec, result.backend = sandbox_plan(task, backend=backend, run_id=run_id, limits=limits, network=network)
        with task_sandbox(task, spec, result.backend) as box:
            result.timings["setup"] = time.perf_counter() - started
            if task.config.steps:
                run_steps(task, agent, box, spec, result, clear=clear_verifier_logs, last_step=last_step, hooks=hooks)
            else:
                plan = VerifierPlan.of(task)
                hooked_phases(task, agent, box, spec, plan, result, hooks=hooks, clear=clear_verifier_logs,
                              backend=result.backend)  # fmt: skip
                shared = result.verifier_sandbox is VerifierSandbox.SHARED
                if verifier_reruns and shared and result.exit_status is ExitStatus.OK:
                    result.reruns = rerun_after(box, plan, verifier_reruns, result)
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
