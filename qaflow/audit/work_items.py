"""The audit's work items: pure top-level functions of picklable arguments (the task, or its packed folder;
a probe's agent as a `ProbeAgent` description) that run on an executor's worker and return results. They
never touch the ledger: the driver (`qaflow.audit.runner`) records what they return."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from qaflow.audit.mutants import Mutant, MutantAgent
from qaflow.audit.mutants.differential import DIFF_SCRIPT
from qaflow.audit.observe import observe_trial
from qaflow.audit.probe_agent import ProbeAgent
from qaflow.audit.probe_run import ProbeRun, tail
from qaflow.errors import BaseImageUnavailableError, BuildError, UnsupportedError
from qaflow.executors import TaskRef, resolve_task
from qaflow.models.probe_key import ProbeKey
from qaflow.sandbox import backend_class
from qaflow.sandbox.image_names import declared_python
from qaflow.sandbox.spec import RunNetwork, RuntimeNetwork, spec_for_task
from qaflow.task import Task
from qaflow.trial import run_trial
from qaflow.trial.effects import RecordingAgent
from qaflow.trial.task_sandbox import task_sandbox


class RunContext(BaseModel):
    """Where and how one run's work items run: the same for every item of a task, frozen and picklable."""

    model_config = ConfigDict(frozen=True)

    backend: str
    """The backend the task's work runs on (chosen once per task version and run)."""
    run_id: str
    network: RunNetwork = Field(default_factory=RunNetwork)


@dataclass(frozen=True)
class TrialRequest:
    """One probe trial: the ledger key (`probe`, `attempt`), the agent, and whether the verifier's logs are
    cleared before the verifier runs (the tamper probe keeps what its agent planted there)."""

    key: ProbeKey
    attempt: int
    agent: ProbeAgent
    clear_logs: bool = True

    @property
    def probe(self) -> str:
        return str(self.key)


class PythonCheck(BaseModel):
    """The Python a stand-in image runs, against the version the task's image name declares."""

    declared: str
    found: str


class BuildResult(BaseModel):
    """The build probe's result, as the ledger keeps it (its payload) and the audit report shows it."""

    status: Literal["ok", "failed"] = "ok"
    error: str | None = None
    log_tail: str = ""
    base_unavailable: bool = False
    """This machine lacks the base image the task's image needs."""
    unsupported: bool = False
    """The backend cannot build this Dockerfile."""
    stand_ins: dict[str, str] = Field(default_factory=dict)
    """Image names the task declares -> the local images that stood in for them."""
    python: PythonCheck | None = None

    @model_validator(mode="before")
    @classmethod
    def _from_strings(cls, data: Any) -> Any:
        """Results recorded before this model held JSON in strings and flags as "1": read them as typed."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        for key in ("stand_ins", "python"):
            if isinstance(data.get(key), str):
                data[key] = json.loads(data[key])
        for flag in ("base_unavailable", "unsupported"):
            if data.get(flag) == "1":
                data[flag] = True
        return data

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def payload(self) -> dict[str, Any]:
        """The ledger payload and the report's `probes.build`: the status and what is not a default."""
        return {"status": self.status, **self.model_dump(mode="json", exclude_defaults=True)}


class BuildOutcome(BaseModel):
    """What `build_item` returns: the build's result and how long it took."""

    result: BuildResult
    duration_s: float = 0.0


MUTANT_TIMEOUT_FLOOR_S = 60.0


def build_item(task: Task | TaskRef, context: RunContext) -> BuildOutcome:
    """Work item: build (or find cached) the task's environment on the backend where it runs."""
    t0 = time.perf_counter()
    result = BuildResult()
    loaded = resolve_task(task)
    try:
        spec = spec_for_task(loaded, run_id=context.run_id, network=context.network)
        sandboxes = backend_class(context.backend)()
        sandboxes.build(spec)
        if used := sandboxes.stand_ins(spec):
            result.stand_ins = dict(used)
            # the stand-in's own python3 (one short container per stand-in and process), not each task image's
            declared = {(v, local) for ref, local in used.items() if (v := declared_python(ref)) is not None}
            if len(declared) == 1:
                version, local = declared.pop()
                if (found := sandboxes.python_version(local)) is not None:
                    result.python = PythonCheck(declared=version, found=found)
    except BuildError as e:
        result = BuildResult(
            status="failed", error=str(e).splitlines()[0], log_tail=tail(e.log_tail, 3000),
            base_unavailable=isinstance(e, BaseImageUnavailableError), stand_ins=dict(e.stand_ins),
        )  # fmt: skip
    except UnsupportedError as e:
        result = BuildResult(status="failed", unsupported=True, error=str(e))
    return BuildOutcome(result=result, duration_s=time.perf_counter() - t0)


DIFF_DIR = "/tmp/qaflow-differential"
DIFF_TIMEOUT_S = 120.0


def differential_item(task: Task | TaskRef, base: Mutant, config: str, context: RunContext) -> dict[str, Any]:
    """Work item: in a fresh sandbox of the task's image with the oracle's state (`base`) in place, call the
    oracle's and a code mutant's functions on the tests' inputs (`differential.DIFF_SCRIPT`, `config`)."""
    loaded = resolve_task(task)
    spec = spec_for_task(loaded, run_id=context.run_id, network=context.network)
    with task_sandbox(loaded, spec, context.backend) as box:
        MutantAgent(base).run(loaded, box)
        box.put(f"{DIFF_DIR}/config.json", config.encode())
        box.put(f"{DIFF_DIR}/diff.py", DIFF_SCRIPT.encode())
        user = loaded.config.agent.user
        done = box.exec(
            ["python3", f"{DIFF_DIR}/diff.py", f"{DIFF_DIR}/config.json"], timeout=DIFF_TIMEOUT_S, user=user
        )
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
    try:
        outcome = json.loads(lines[-1]) if lines else None
    except ValueError:
        outcome = None
    if not isinstance(outcome, dict):
        return {"error": f"exit {done.exit_code}: {done.stderr[-300:]}", "differs": []}
    return outcome


def trial_item(task: Task | TaskRef, request: TrialRequest, context: RunContext) -> ProbeRun:
    """Work item: one probe trial (the agent rebuilt from its description), as a `ProbeRun`."""
    agent, probe, attempt = request.agent, request.probe, request.attempt
    run_network, backend, run_id = context.network, context.backend, context.run_id
    if agent.kind == "observe":
        observed, observation = observe_trial(
            resolve_task(task),
            backend=backend,
            run_id=run_id,
            network=run_network,
            reruns=agent.reruns,
            outputs=agent.outputs,
            last_step=agent.step,
        )
        run = ProbeRun.of(probe, attempt, observed)
        run.observation = observation
        if run_network.network is not RuntimeNetwork.TASK:
            run.network = run_network.network.value
        return run
    built = agent.agent()
    result = run_trial(
        _capped(resolve_task(task), agent.verifier_timeout_sec),
        built,
        backend=backend,
        run_id=run_id,
        clear_verifier_logs=request.clear_logs,
        network=run_network,
        last_step=agent.step,
        verifier_reruns=agent.reruns,
    )
    run = ProbeRun.of(probe, attempt, result)
    if run_network.network is not RuntimeNetwork.TASK:
        run.network = run_network.network.value
    if isinstance(built, RecordingAgent):
        run.effect = built.effect
        run.effects = dict(built.effects)
    return run


def _capped(task: Task, seconds: float | None) -> Task:
    """`task` with its verifier's timeout cut to `seconds` (a copy; the task itself may be shared by threads)."""
    current = task.config.verifier.timeout_sec
    if seconds is None or (current is not None and seconds >= current):
        return task
    verifier = task.config.verifier.model_copy(update={"timeout_sec": seconds})
    return task.model_copy(update={"config": task.config.model_copy(update={"verifier": verifier})})


def mutant_timeout(oracle: list[ProbeRun]) -> float:
    """The verifier timeout of a code mutant's trial: 5x the longest oracle trial, at least a minute (a mutant
    that spins forever costs that, not the task's whole verifier timeout)."""
    return max(MUTANT_TIMEOUT_FLOOR_S, 5 * max((r.duration_s for r in oracle), default=0.0))
