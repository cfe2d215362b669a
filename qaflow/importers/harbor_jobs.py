"""Import Harbor job folders: every trial becomes one `RolloutRecord`.

Harbor's layout: a job folder holds `config.json`, `result.json` (the job's) and one folder per
trial; a trial folder holds `result.json` (a TrialResult), `agent/trajectory.json` (ATIF, the Agent
Trajectory Interchange Format) and `verifier/` (`reward.txt` or `reward.json`, `test-stdout.txt`).

The trajectory's conversion to chat messages, usage and side calls (`atif_to_messages`, `atif_tools`) is
in `qaflow.importers.atif`, whose docstring gives its rules.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import defaultdict
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, ValidationError

from qaflow.errors import PathError
from qaflow.importers.atif import AtifError, _check_trajectory, atif_to_messages, atif_tools
from qaflow.models.records import utcnow
from qaflow.models.rollout import Effort, RolloutRecord, SideCall, TurnUsage
from qaflow.models.trial import ExitStatus

TRAJECTORY_PATH = Path("agent") / "trajectory.json"
VERIFIER_OUTPUT_CHARS = 20_000
"""Characters of verifier output kept (the tail), as for the harness's own rollouts."""
MAX_CONTINUATIONS = 100
SEARCH_DEPTH = 4
"""How deep below SRC trial folders are looked for (SRC / jobs / job / trial is depth 2)."""

EFFORT_ALIASES: dict[str, Effort] = {
    "none": Effort.OFF,
    "off": Effort.OFF,
    "minimal": Effort.OFF,
    "low": Effort.LOW,
    "medium": Effort.MEDIUM,
    "high": Effort.XHIGH,
    "xhigh": Effort.XHIGH,
    "max": Effort.XHIGH,
}
"""Harbor `reasoning_effort` values to ours; others (e.g. "default") are unknown and give `off`."""

EFFORT_KWARGS = ("reasoning_effort", "reasoning-effort", "effort", "model_reasoning_effort")
NESTED_KWARGS = ("llm_kwargs", "llm_call_kwargs", "model_kwargs", "model_settings")
TIMEOUT_STATUS = {
    "AgentTimeoutError": ExitStatus.AGENT_TIMEOUT,
    "VerifierTimeoutError": ExitStatus.VERIFIER_TIMEOUT,
}
JOB_RESULT_KEYS = ("n_total_trials", "trial_results", "stats")
TRIAL_MARKERS = ("agent", "verifier", "trial.log")


class HarborImportError(PathError):
    """A trial (or the whole source) cannot be imported. `path` names the file, `reason` says why."""


# --- result.json (Harbor's TrialResult), only the fields read here --------------------------------


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore")


class HarborTiming(_Model):
    started_at: datetime | None = None
    finished_at: datetime | None = None

    def seconds(self) -> float | None:
        if self.started_at is None or self.finished_at is None:
            return None
        return (self.finished_at - self.started_at).total_seconds()


class HarborException(_Model):
    exception_type: str
    exception_message: str = ""


class HarborModelInfo(_Model):
    name: str
    provider: str | None = None


class HarborAgentInfo(_Model):
    name: str
    version: str = ""
    model_info: HarborModelInfo | None = None


class HarborVerifierResult(_Model):
    rewards: dict[str, float] | None = None


class HarborAgentConfig(_Model):
    name: str | None = None
    model_name: str | None = None
    agent_kwargs: dict[str, Any] = Field(default_factory=dict, validation_alias=AliasChoices("kwargs"))
    """Harbor's `kwargs`. Renamed because the pydantic mypy plugin gives `__init__` a `**kwargs` of its own;
    an `AliasChoices` alias keeps the field out of that generated signature."""


class HarborEnvironmentConfig(_Model):
    type: str | None = None


class HarborTrialConfig(_Model):
    agent: HarborAgentConfig = Field(default_factory=HarborAgentConfig)
    environment: HarborEnvironmentConfig = Field(default_factory=HarborEnvironmentConfig)
    job_id: str | None = None


class HarborTrialResult(_Model):
    """The part of a trial's `result.json` that an import needs."""

    id: str | None = None
    task_name: str
    trial_name: str
    task_id: dict[str, Any] | None = None
    source: str | None = None
    task_checksum: str | None = None
    config: HarborTrialConfig = Field(default_factory=HarborTrialConfig)
    agent_info: HarborAgentInfo | None = None
    agent_result: dict[str, Any] | None = None
    verifier_result: HarborVerifierResult | None = None
    exception_info: HarborException | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    environment_setup: HarborTiming | None = None
    agent_setup: HarborTiming | None = None
    agent_execution: HarborTiming | None = None
    verifier: HarborTiming | None = None
    step_results: list[dict[str, Any]] | None = None


class TrialError(BaseModel):
    """A trial that was not imported: the file at fault and why."""

    path: Path
    reason: str


class ImportReport(BaseModel):
    """What `import_job` found: one record per imported trial, one error per trial it could not read."""

    source: Path
    trials: int = 0
    records: list[RolloutRecord] = Field(default_factory=list)
    errors: list[TrialError] = Field(default_factory=list)

    @property
    def imported(self) -> int:
        return len(self.records)

    def summary(self) -> str:
        return f"{self.trials} trials: {self.imported} imported, {len(self.errors)} errors"


# --- trials and jobs -------------------------------------------------------------------------------


def _load_json(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise HarborImportError(path, "missing") from None
    except (OSError, UnicodeDecodeError) as e:
        raise HarborImportError(path, f"unreadable: {e}") from None
    if not text.strip():
        raise HarborImportError(path, "empty file")
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise HarborImportError(path, f"malformed JSON: {e}") from None


def _validation_reason(error: ValidationError) -> str:
    problems = [f"{'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}" for e in error.errors()[:3]]
    return "not a Harbor trial result (" + "; ".join(problems) + ")"


def read_trial_result(trial_dir: Path) -> HarborTrialResult:
    """The trial's result.json; HarborImportError names the file when it is missing or not a trial result."""
    path = trial_dir / "result.json"
    data = _load_json(path)
    if isinstance(data, dict) and any(k in data for k in JOB_RESULT_KEYS) and "trial_name" not in data:
        raise HarborImportError(path, "a job result, not a trial result")
    try:
        return HarborTrialResult.model_validate(data)
    except ValidationError as e:
        raise HarborImportError(path, _validation_reason(e)) from None


def map_effort(value: Any) -> Effort | None:
    """Our effort level for a Harbor `reasoning_effort` value; None when it is absent or unknown."""
    if isinstance(value, str):
        return EFFORT_ALIASES.get(value.strip().lower())
    return None


def _config_effort(kwargs: dict[str, Any]) -> Any:
    for key in EFFORT_KWARGS:
        if kwargs.get(key) is not None:
            return kwargs[key]
    for nested in NESTED_KWARGS:
        inner = kwargs.get(nested)
        if isinstance(inner, dict):
            found = _config_effort(inner)
            if found is not None:
                return found
    return None


def _rewards(result: HarborTrialResult, trial_dir: Path) -> dict[str, float] | None:
    if result.verifier_result is not None:
        return result.verifier_result.rewards
    verifier = trial_dir / "verifier"
    try:
        data = json.loads((verifier / "reward.json").read_text(encoding="utf-8"))
        if isinstance(data, dict):
            return {str(k): float(v) for k, v in data.items()}
    except (OSError, ValueError, TypeError):
        pass
    try:
        return {"reward": float((verifier / "reward.txt").read_text(encoding="utf-8").strip())}
    except (OSError, ValueError):
        return None


def reward_of(rewards: dict[str, float] | None) -> tuple[float | None, bool]:
    """(reward, full_reward): the "reward" key, else the mean; full when every value is at least 1."""
    values = [v for v in (rewards or {}).values() if isinstance(v, int | float) and math.isfinite(v)]
    if not rewards or not values:
        return None, False
    reward = float(rewards["reward"]) if "reward" in rewards else sum(values) / len(values)
    return reward, all(v >= 1 for v in values)


def _verifier_output(trial_dir: Path) -> str:
    parts = []
    for name in ("test-stdout.txt", "test-stderr.txt"):
        try:
            text = (trial_dir / "verifier" / name).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if text.strip():
            parts.append(text)
    return "\n".join(parts)[-VERIFIER_OUTPUT_CHARS:]


def _timings(result: HarborTrialResult) -> dict[str, float]:
    timings: dict[str, float] = {}
    total = HarborTiming(started_at=result.started_at, finished_at=result.finished_at).seconds()
    if total is not None:
        timings["total"] = total
    setup = [t.seconds() for t in (result.environment_setup, result.agent_setup) if t is not None]
    if any(s is not None for s in setup):
        timings["setup"] = sum(s for s in setup if s is not None)
    for key, timing in (("agent", result.agent_execution), ("verifier", result.verifier)):
        seconds = timing.seconds() if timing is not None else None
        if seconds is not None:
            timings[key] = seconds
    return timings


def _aware(moment: datetime | None) -> datetime | None:
    if moment is not None and moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    return moment


def _model(result: HarborTrialResult, trajectory: dict[str, Any] | None) -> str:
    if result.config.agent.model_name:
        return result.config.agent.model_name
    info = result.agent_info.model_info if result.agent_info else None
    if info is not None:
        return f"{info.provider}/{info.name}" if info.provider else info.name
    agent = (trajectory or {}).get("agent")
    if isinstance(agent, dict) and agent.get("model_name"):
        return str(agent["model_name"])
    return "unknown"


def _task_version(result: HarborTrialResult) -> str:
    if result.task_checksum:
        return result.task_checksum
    key = json.dumps(result.task_id if result.task_id is not None else result.task_name, sort_keys=True, default=str)
    return hashlib.sha256(key.encode()).hexdigest()


def _load_trajectory(trial_dir: Path) -> tuple[dict[str, Any] | None, list[str], str | None]:
    """(trajectory, continuation files, None): the trial's trajectory with its linear-history continuations
    (`continued_trajectory_ref`) appended; (None, [], why not) when it cannot be read."""
    path = trial_dir / TRAJECTORY_PATH
    if not path.is_file():
        if (trial_dir / "steps").is_dir():
            return None, [], f"no {TRAJECTORY_PATH.as_posix()} (multi-step trials keep theirs in steps/: not imported)"
        return None, [], f"no {TRAJECTORY_PATH.as_posix()}"
    try:
        trajectory = _load_json(path)
        steps = _check_trajectory(trajectory)
    except HarborImportError as e:
        return None, [], f"{TRAJECTORY_PATH.as_posix()}: {e.reason}"
    except AtifError as e:
        return None, [], f"{TRAJECTORY_PATH.as_posix()}: {e}"
    merged = {**trajectory, "steps": list(steps)}
    seen = {path.name}
    ref = trajectory.get("continued_trajectory_ref")
    while isinstance(ref, str) and ref and len(seen) <= MAX_CONTINUATIONS:
        name = Path(ref).name
        if name in seen:
            break
        seen.add(name)
        try:
            part = _load_json(path.parent / name)
            merged["steps"].extend(_check_trajectory(part))
        except (HarborImportError, AtifError) as e:
            return None, [], f"continuation {name}: {e}"
        merged["final_metrics"] = part.get("final_metrics", merged.get("final_metrics"))
        ref = part.get("continued_trajectory_ref")
    return merged, sorted(seen - {path.name}), None


def import_trial(
    trial_dir: Path,
    *,
    source: str | None = None,
    effort: Effort | str | None = None,
    attempt: int = 0,
) -> RolloutRecord:
    """One Harbor trial folder as a rollout record.

    Raises HarborImportError (with the file at fault) when result.json is missing, malformed or not a
    trial result. A missing or unreadable trajectory gives a record without messages whose `error`
    says so. `effort` overrides the effort found in the trial's agent kwargs or trajectory.

    Long on purpose: one Harbor trial's fields mapped onto one record, field by field.
    """
    trial_dir = Path(trial_dir)
    result = read_trial_result(trial_dir)
    trajectory, continuations, trajectory_error = _load_trajectory(trial_dir)
    messages: list[dict[str, Any]] = []
    usage: list[TurnUsage] = []
    side_calls: list[SideCall] = []
    tools: list[dict[str, Any]] = []
    atif_meta: dict[str, Any] = {}
    if trajectory is not None:
        try:
            messages, usage, side_calls, atif_meta = atif_to_messages(
                trajectory, base_dir=trial_dir / TRAJECTORY_PATH.parent
            )
            tools, derived = atif_tools(trajectory)
            atif_meta["tools_derived"] = derived
            atif_meta["continuations"] = continuations
        except AtifError as e:
            trajectory_error = f"{TRAJECTORY_PATH.as_posix()}: {e}"

    status = ExitStatus.OK
    errors = []
    exc = result.exception_info
    if exc is not None:
        status = TIMEOUT_STATUS.get(exc.exception_type, ExitStatus.ERROR)
        errors.append(f"{exc.exception_type}: {exc.exception_message}".rstrip(": "))
    if trajectory_error:
        errors.append(trajectory_error)

    raw_effort = _config_effort(result.config.agent.agent_kwargs)
    if raw_effort is None:
        raw_effort = atif_meta.get("reasoning_effort")
    chosen = Effort(effort) if effort is not None else map_effort(raw_effort) or Effort.OFF

    rewards = _rewards(result, trial_dir)
    reward, full = reward_of(rewards)
    job_dir = trial_dir.resolve().parent
    agent_name = result.agent_info.name if result.agent_info else result.config.agent.name or "harbor"
    return RolloutRecord(
        task=result.task_name,
        task_version=_task_version(result),
        source=source or f"harbor:{job_dir.name}",
        model=_model(result, trajectory),
        effort=chosen,
        attempt=attempt,
        agent=agent_name,
        messages=messages,
        tools=tools,
        usage=usage,
        thinking_tokens=sum(u.reasoning_tokens for u in usage),
        turns=len(usage),
        reward=reward,
        rewards=rewards,
        full_reward=full,
        exit_status=status,
        stop_reason="wall_time" if status is ExitStatus.AGENT_TIMEOUT else "imported",
        error="; ".join(errors) or None,
        verifier_output=_verifier_output(trial_dir),
        side_calls=side_calls,
        timings=_timings(result),
        backend=result.config.environment.type or "",
        created_at=_aware(result.finished_at or result.started_at) or utcnow(),
        meta={
            "cost_usd": (result.agent_result or {}).get("cost_usd"),
            "harbor": {
                "job_dir": str(job_dir),
                "trial_dir": str(trial_dir.resolve()),
                "trial_name": result.trial_name,
                "trial_id": result.id,
                "job_id": result.config.job_id,
                "task_id": result.task_id,
                "task_source": result.source,
                "agent_version": result.agent_info.version if result.agent_info else None,
                "agent_result": result.agent_result,
                "reasoning_effort": raw_effort,
                "exception_type": exc.exception_type if exc else None,
            },
            "atif": atif_meta,
        },
    )


def _is_job_result(path: Path) -> bool:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and "trial_name" not in data and any(k in data for k in JOB_RESULT_KEYS)


def _subdirs(folder: Path) -> list[Path]:
    try:
        return sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith("."))
    except OSError:
        return []


def is_trial_dir(folder: Path) -> bool:
    """A trial folder: it has agent/, verifier/ or trial.log, or a result.json that is not a job's."""
    if any((folder / m).exists() for m in TRIAL_MARKERS):
        return True
    result = folder / "result.json"
    if not result.is_file() or _is_job_result(result):
        return False
    return not any((d / "result.json").is_file() or (d / "agent").is_dir() for d in _subdirs(folder))


def find_trials(src: Path, depth: int = SEARCH_DEPTH) -> Iterator[Path]:
    """Trial folders at or below `src`: SRC itself, the trials of a job, or of a folder of jobs."""
    if is_trial_dir(src):
        yield src
        return
    if depth <= 0:
        return
    for child in _subdirs(src):
        yield from find_trials(child, depth - 1)


def import_job(
    job_dir: Path,
    *,
    source: str | None = None,
    effort: Effort | str | None = None,
) -> ImportReport:
    """Every trial under `job_dir` (a job folder, a trial folder, or a folder of job folders) as a record.

    A trial that cannot be read is reported with the file and reason; the others are imported.
    `attempt` numbers the trials of one (task version, model, effort) in (job folder, trial name)
    order over the whole import, so that no two imported trials share a rollout id.
    Raises HarborImportError when `job_dir` does not exist or holds no trial folder.
    """
    job_dir = Path(job_dir)
    effort = Effort(effort) if effort is not None else None
    if not job_dir.is_dir():
        raise HarborImportError(job_dir, "no such folder")
    trials = sorted(find_trials(job_dir), key=lambda p: (str(p.parent), p.name))
    if not trials:
        raise HarborImportError(job_dir, "no Harbor trial folders (with result.json) found")
    report = ImportReport(source=job_dir, trials=len(trials))
    for trial in trials:
        try:
            report.records.append(import_trial(trial, source=source, effort=effort))
        except HarborImportError as e:
            report.errors.append(TrialError(path=e.path, reason=e.reason))
        except (OSError, ValueError) as e:
            report.errors.append(TrialError(path=trial, reason=f"{type(e).__name__}: {e}"))
    counters: dict[tuple[str, str, str], int] = defaultdict(int)
    for record in report.records:
        key = (record.task_version, record.model, record.effort.value)
        record.attempt = counters[key]
        counters[key] += 1
    return report
