"""What a trial returns: its result, per-step results, exit status and error info (README, "The trial").

`ExitStatus` is the one vocabulary for how an attempt ended: the trial's result, the ledger's result
rows and the rollout records all use it.
"""

from __future__ import annotations

import traceback
from enum import StrEnum

from pydantic import BaseModel, Field

from qaflow.errors import BuildError, RewardError, RewardForgedError, SandboxError, TaskError, UnsupportedError


class ExecResult(BaseModel):
    exit_code: int
    """Exit status; 137 (SIGKILL) style codes when killed, -1 when unknown."""
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False
    duration_s: float = 0.0
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    oom_killed: bool = False
    storage_exceeded: bool = False
    """The command pushed the sandbox's writable files past `limits.storage_mb` and was killed."""
    sandbox_died: bool = False
    """The whole sandbox died under the command (e.g. gVisor's sandbox OOM-killed as one process)."""
    strays_killed: int = 0
    """With `kill_strays_after`: processes still running when the command ended, killed then (bwrap's
    per-exec pid namespace takes them down by itself: 0 there)."""

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


class ExitStatus(StrEnum):
    OK = "ok"
    AGENT_TIMEOUT = "agent_timeout"
    VERIFIER_TIMEOUT = "verifier_timeout"
    ERROR = "error"


class ErrorKind(StrEnum):
    BUILD = "build_failed"
    REWARD = "reward_missing"
    REWARD_FORGED = "reward_forged"
    """A process other than the verifier's own wrote the reward, or the reward guard cannot tell."""
    UNSUPPORTED = "unsupported"
    SANDBOX = "sandbox"
    TASK = "invalid_task"
    SETUP = "setup_failed"
    """A multi-step task's step setup (workdir/setup.sh, healthcheck) failed."""
    INTERNAL = "internal"


class VerifierSandbox(StrEnum):
    SHARED = "shared"
    VIEW = "view"
    SEPARATE = "separate"


class ErrorInfo(BaseModel):
    kind: ErrorKind
    type: str
    message: str
    traceback: str = ""

    @classmethod
    def of(cls, exc: BaseException) -> ErrorInfo:
        kinds: list[tuple[type[BaseException], ErrorKind]] = [
            (BuildError, ErrorKind.BUILD),
            (UnsupportedError, ErrorKind.UNSUPPORTED),
            (SandboxError, ErrorKind.SANDBOX),
            (RewardError, ErrorKind.REWARD),
            (RewardForgedError, ErrorKind.REWARD_FORGED),
            (TaskError, ErrorKind.TASK),
        ]
        kind = next((k for t, k in kinds if isinstance(exc, t)), ErrorKind.INTERNAL)
        return cls(
            kind=kind,
            type=type(exc).__name__,
            message=str(exc),
            traceback="".join(traceback.format_exception(exc)),
        )


class PhaseResult(BaseModel):
    """What the agent and verifier phases leave, for a whole trial or one step of a multi-step trial."""

    reward: float | None = None
    rewards: dict[str, float] | None = None
    reward_source: str | None = None
    """reward.json or reward.txt: the file the reward was read from."""
    full_reward: bool = False
    exit_status: ExitStatus = ExitStatus.OK
    error: ErrorInfo | None = None
    agent_exec: ExecResult | None = None
    verifier_exec: ExecResult | None = None
    timings: dict[str, float] = Field(default_factory=dict)
    """Seconds per phase: setup (build + start), agent, verifier, total."""
    strays_killed: dict[str, int] = Field(default_factory=dict)
    """Processes still running after a phase (agent, verifier), killed before the next step."""
    verifier_sandbox: VerifierSandbox | None = None
    """Where the verifier ran: in the sandbox itself, in a view of it (services left running), or separate."""
    services_left: int = 0
    """Processes the agent phase left running for the verifier (servers); 0 when none."""
    verifier_note: str | None = None
    """Why the verifier could not see what the agent left running, when it could not (a backend limit)."""
    reruns: list[bool] = Field(default_factory=list)
    """Plain reruns of the verifier on the same final state, when asked for: full reward or not, in order."""


class _StepName(BaseModel):
    name: str


class StepResult(PhaseResult, _StepName):
    """One step of a multi-step trial: its phases and reward, as a trial records them."""

    setup_exec: ExecResult | None = None
    """workdir/setup.sh, when the step has one."""
    aborted: str | None = None
    """Why no later step ran (an error, no reward, min_reward not met); None when the trial went on."""


class _TrialKey(BaseModel):
    task: str
    version: str
    agent: str
    backend: str
    run_id: str


class TrialResult(PhaseResult, _TrialKey):
    """One trial: which agent ran which task version where, and what its phases left (`PhaseResult`)."""

    steps: list[StepResult] = Field(default_factory=list)
    """A multi-step task's steps that ran, in order; the fields above are their roll-up (`qaflow.trial.steps`)."""
