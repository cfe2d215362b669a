"""`ProbeRun`: the compact record of one probe trial, stored as a ledger result's payload (what the trial
ran is `qaflow.audit.probe_agent.ProbeAgent`)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, model_validator

from qaflow.audit.observation import Observation
from qaflow.models.trial import ExitStatus, PhaseResult, StepResult, TrialResult
from qaflow.sandbox.base import ExecResult
from qaflow.trial.effects import Effect

TAIL_CHARS = 2000


def tail(text: str, limit: int = TAIL_CHARS) -> str:
    return text if len(text) <= limit else "…" + text[-limit:]


class ProbeRun(BaseModel):
    probe: str
    """nop, oracle, tamper, observe, exploit:<name>, mutant:<name>."""
    attempt: int = 0
    reward: float | None = None
    rewards: dict[str, float] | None = None
    reward_source: str | None = None
    full: bool = False
    exit_status: str = "ok"
    error_kind: str | None = None
    error: str | None = None
    agent_exit: int | None = None
    agent_timed_out: bool = False
    agent_output: str = ""
    verifier_exit: int | None = None
    verifier_timed_out: bool = False
    verifier_output: str = ""
    duration_s: float = 0.0
    timings: dict[str, float] = {}
    """Seconds by phase: setup, agent, verifier, reruns (the verifier's reruns, all of them), total."""
    services_left: int = 0
    """Processes the agent phase left running for the verifier."""
    verifier_note: str | None = None
    """Why the verifier could not reach what the agent left running (a backend limit), if it could not."""
    reruns: list[bool] = []
    """Plain verifier reruns on this trial's final state (nop, oracle and observe probes): full reward or not."""
    network: str | None = None
    """The runtime network, when not the task's own (`--network none`)."""
    effect: Effect | None = None
    """What the agent phase changed, when the probe recorded it (the first oracle trial)."""
    effects: dict[str, Effect] = {}
    """A multi-step trial's recorded effects, by step."""
    observation: Observation | None = None
    """The observe probe's view of the verifier's trust boundary."""
    description: str = ""
    """A mutant's: what it changed."""
    step: str | None = None
    """One step's view of a multi-step run: its name."""
    aborted: str | None = None
    """One step's view: why the trial ended after it (`min_reward`, an error), if it did."""
    setup_output: str = ""
    """One step's view: what its setup.sh printed."""
    steps: list[ProbeRun] = []
    """A multi-step run's per-step views."""
    extra: dict[str, Any] = {}
    """What a newer qaflow recorded that this one does not know (kept as read)."""

    @model_validator(mode="before")
    @classmethod
    def _typed_from_extra(cls, data: Any) -> Any:
        """Results recorded before these fields were typed carried them in `extra`: read them from there."""
        if isinstance(data, dict) and isinstance(data.get("extra"), dict):
            extra = dict(data["extra"])
            lifted = {k: extra.pop(k) for k in _TYPED if k in extra and k not in data}
            if lifted:
                data = {**data, **lifted, "extra": extra}
        return data

    @classmethod
    def of(cls, probe: str, attempt: int, result: PhaseResult) -> ProbeRun:
        """The run of a trial, or of one step of a multi-step trial (read back by `audit.probes.step_views`)."""

        def out(ex: ExecResult | None) -> str:
            return "" if ex is None else tail(ex.stdout + ("\n" if ex.stdout and ex.stderr else "") + ex.stderr)

        run = cls(
            probe=probe,
            attempt=attempt,
            reward=result.reward,
            rewards=result.rewards,
            reward_source=result.reward_source,
            full=result.full_reward,
            exit_status=result.exit_status.value,
            error_kind=None if result.error is None else result.error.kind.value,
            error=None if result.error is None else tail(result.error.message),
            agent_exit=None if result.agent_exec is None else result.agent_exec.exit_code,
            agent_timed_out=bool(result.agent_exec and result.agent_exec.timed_out),
            agent_output=out(result.agent_exec),
            verifier_exit=None if result.verifier_exec is None else result.verifier_exec.exit_code,
            verifier_timed_out=bool(result.verifier_exec and result.verifier_exec.timed_out),
            verifier_output=out(result.verifier_exec),
            duration_s=result.timings.get("total", 0.0),
            timings={k: round(v, 4) for k, v in result.timings.items()},
            services_left=getattr(result, "services_left", 0),
            verifier_note=getattr(result, "verifier_note", None),
            reruns=list(result.reruns),
        )
        if isinstance(result, StepResult):
            run.step, run.aborted, run.setup_output = result.name, result.aborted, out(result.setup_exec)
        elif isinstance(result, TrialResult) and result.steps:
            run.steps = [cls.of(probe, attempt, step) for step in result.steps]
        return run

    @property
    def status(self) -> ExitStatus:
        return ExitStatus(self.exit_status)

    @property
    def agent_failed(self) -> bool:
        return self.agent_timed_out or (self.agent_exit not in (None, 0))

    @property
    def reward_missing(self) -> bool:
        return self.error_kind == "reward_missing"

    def brief(self) -> dict[str, Any]:
        """The evidence view: what a person needs to see this run's outcome."""
        view = {
            "probe": self.probe,
            "attempt": self.attempt,
            "reward": self.reward,
            "exit_status": self.exit_status,
            "error": self.error,
            "agent_exit": self.agent_exit,
            "verifier_exit": self.verifier_exit,
            "verifier_output_tail": tail(self.verifier_output, 600),
        }
        if self.services_left:  # the verifier ran beside processes the agent left running
            view |= {"services_left": self.services_left, "verifier_note": self.verifier_note}
        return view


_TYPED = ("network", "effect", "effects", "observation", "description", "step", "aborted", "setup_output", "steps")


def recorded_network(payload: dict[str, Any]) -> str | None:
    """A recorded run's `network` read from its raw ledger payload, in either shape (`_typed_from_extra`),
    without validating the rest of it."""
    extra = payload.get("extra")
    return payload.get("network") or (extra.get("network") if isinstance(extra, dict) else None)
