"""`qaflow sft select`: choose the checkpoint that solves the most held-out tasks, not the lowest loss.

Two stages, as the method does it (`SelectConfig`):

1. **Shortlist**: every checkpoint runs on a small subset of the tasks (`subset_size`, the same tasks for
   every checkpoint: the first by a seeded hash of the task version) at each of `shortlist_efforts`
   (default low, medium, xhigh). Score: task-effort pairs solved; the best `shortlist_size` go on.
2. **Final**: the shortlisted checkpoints run on the full task set at one effort (`final_effort`). The
   choice: most tasks solved; ties go to the lower validation loss, then fewer mean output tokens, then
   the earlier step.

`subset_size = 0` skips stage 1 (every checkpoint runs the final stage), as does having no more checkpoints
than `shortlist_size`. Both tables are kept in the
`Selection`; the lowest-loss checkpoint is reported even when it is not chosen. When several checkpoints
solve the most tasks in stage 2 the agentic evaluation could not separate them: `tied` names them and
`tie_break` the criterion that chose (lower validation loss, fewer mean output tokens, or the earlier step).

The CLI evaluates on the pool's accepted tasks only (`accepted_tasks`: the current version of each task
folder has that status in the pool ledger); a task nobody audited may pass for any checkpoint.

Each checkpoint is evaluated by the agent harness (served by an OpenAI-compatible endpoint, or loaded
locally through the `qaflow-local` litellm provider, which gets its effort table). Results are cached per
(checkpoint content, task version, effort, attempts, harness settings): the content is a hash of the
checkpoint's model files, not its folder name, so a checkpoint retrained under the same name, or the same
checkpoint selected on another pool, never reuses records that do not belong to it; and a task already run
at an effort in stage 1 is not run again in stage 2.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from pathlib import Path

import polars as pl
from pydantic import BaseModel, ConfigDict, Field, model_validator

from qaflow.agents.effort import check_efforts
from qaflow.agents.harness import HarnessConfig
from qaflow.llm import LLMConfig
from qaflow.models.frame import read_rollouts, write_shard
from qaflow.models.records import VersionStatus
from qaflow.models.rollout import Effort, RolloutRecord
from qaflow.rollouts.attempt import run_attempt
from qaflow.rollouts.stats import passed_expr
from qaflow.task import Task, find_task_dirs
from sft.train import CheckpointInfo


class SelectConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    subset_size: int = Field(
        16,
        ge=0,
        description="Tasks in the stage-1 subset (the method screens 16 at 3 efforts); 0 = no shortlist stage.",
    )
    shortlist_efforts: list[Effort] = Field(
        default_factory=lambda: [Effort.LOW, Effort.MEDIUM, Effort.XHIGH],
        min_length=1,
        description="Efforts every checkpoint runs the subset at (stage 1).",
    )
    shortlist_attempts: int = Field(1, ge=1, description="Attempts per task and effort in stage 1.")
    shortlist_size: int = Field(2, ge=1, description="Checkpoints that go on to stage 2.")
    final_effort: Effort = Field(Effort.MEDIUM, description="The one effort of stage 2, on every task.")
    final_attempts: int = Field(1, ge=1, description="Attempts per task in stage 2.")
    seed: int = Field(0, description="Seed of the subset choice (a hash of it and each task version).")

    @model_validator(mode="after")
    def _unique_efforts(self) -> SelectConfig:
        self.shortlist_efforts = list(dict.fromkeys(self.shortlist_efforts))
        return self


class EvalOutcome(BaseModel):
    solved: int
    attempted: int
    mean_output_tokens: float = 0.0


class CheckpointRow(BaseModel):
    """Stage 2 (final) result of one checkpoint."""

    checkpoint: str
    step: int
    eval_loss: float | None
    solved: int
    attempted: int
    mean_output_tokens: float


class ShortlistRow(BaseModel):
    """Stage 1 result of one checkpoint: tasks solved per effort on the subset."""

    checkpoint: str
    step: int
    eval_loss: float | None
    solved_by_effort: dict[str, int]
    solved: int = Field(description="Task-effort pairs solved (the stage-1 score).")
    attempted: int = Field(description="Task-effort pairs run.")
    mean_output_tokens: float
    shortlisted: bool = False


class Selection(BaseModel):
    rows: list[CheckpointRow] = Field(default_factory=list, description="Stage 2: the final table.")
    chosen: str
    lowest_loss: str | None = None
    tied: list[str] = Field(
        default_factory=list, description="Checkpoints that solve as many stage-2 tasks as the chosen one (2 or more)."
    )
    tie_break: str | None = Field(None, description="What chose among `tied`; None when nothing tied.")
    shortlist: list[ShortlistRow] = Field(default_factory=list, description="Stage 1 (empty when skipped).")
    subset: list[str] = Field(default_factory=list, description="Names of the stage-1 tasks.")
    config: SelectConfig = Field(default_factory=SelectConfig)

    def frame(self) -> pl.DataFrame:
        return pl.DataFrame([r.model_dump() for r in self.rows])

    def shortlist_frame(self) -> pl.DataFrame:
        rows = [
            {**r.model_dump(exclude={"solved_by_effort"}), **{f"solved_{e}": n for e, n in r.solved_by_effort.items()}}
            for r in self.shortlist
        ]
        return pl.DataFrame(rows)


Evaluator = Callable[[CheckpointInfo, Sequence[Task], Effort, int], EvalOutcome]
"""evaluate(checkpoint, tasks, effort, attempts) -> how many of `tasks` it solved (any attempt passing)."""


def task_subset(tasks: Sequence[Task], size: int, seed: int = 0) -> list[Task]:
    """The first `size` tasks by a seeded hash of their version: the same subset for every checkpoint."""
    return sorted(tasks, key=lambda t: hashlib.sha256(f"{seed}:{t.version}".encode()).hexdigest())[:size]


def _loss(value: float | None) -> float:
    return value if value is not None else float("inf")


def _rank(row: CheckpointRow | ShortlistRow) -> tuple[float, float, float, int]:
    return (-row.solved, _loss(row.eval_loss), row.mean_output_tokens, row.step)


TIE_BREAKS = ("lower validation loss", "fewer mean output tokens", "the earlier step")
"""What decides among checkpoints that solve as many tasks, in order (the rest of `_rank`)."""


def tie_break(rows: Sequence[CheckpointRow]) -> tuple[list[str], str | None]:
    """The checkpoints that tie on tasks solved with the best one, and the criterion that chose among them."""
    ordered = sorted(rows, key=_rank)
    tied = [r for r in ordered if r.solved == ordered[0].solved]
    if len(tied) < 2:
        return [], None
    best, runner = _rank(tied[0])[1:], _rank(tied[1])[1:]
    reason = next(name for name, a, b in zip(TIE_BREAKS, best, runner, strict=True) if a != b)
    return [r.checkpoint for r in tied], reason


def shortlist_stage(
    checkpoints: Sequence[CheckpointInfo], subset: Sequence[Task], evaluate: Evaluator, config: SelectConfig
) -> list[ShortlistRow]:
    """Stage 1: every checkpoint on `subset` at each shortlist effort; the best `shortlist_size` marked."""
    rows = []
    for info in checkpoints:
        outcomes = {e: evaluate(info, subset, e, config.shortlist_attempts) for e in config.shortlist_efforts}
        rows.append(
            ShortlistRow(
                checkpoint=str(info.path),
                step=info.step,
                eval_loss=info.eval_loss,
                solved_by_effort={e.value: o.solved for e, o in outcomes.items()},
                solved=sum(o.solved for o in outcomes.values()),
                attempted=sum(o.attempted for o in outcomes.values()),
                mean_output_tokens=sum(o.mean_output_tokens for o in outcomes.values()) / len(outcomes),
            )
        )
    for row in sorted(rows, key=_rank)[: config.shortlist_size]:
        row.shortlisted = True
    return rows


def select_checkpoint(
    checkpoints: Sequence[CheckpointInfo],
    tasks: Sequence[Task],
    evaluate: Evaluator,
    config: SelectConfig | None = None,
) -> Selection:
    """Run both stages and choose (see the module docstring).

    Raises:
        ValueError: no checkpoint or no task.
    """
    config = config or SelectConfig()
    if not checkpoints:
        raise ValueError("no checkpoint to evaluate")
    if not tasks:
        raise ValueError("no task to evaluate on")
    shortlist: list[ShortlistRow] = []
    subset: list[Task] = []
    finalists = list(checkpoints)
    if config.subset_size > 0 and len(checkpoints) > config.shortlist_size:
        subset = task_subset(tasks, config.subset_size, config.seed)
        shortlist = shortlist_stage(checkpoints, subset, evaluate, config)
        kept = {r.checkpoint for r in shortlist if r.shortlisted}
        finalists = [info for info in checkpoints if str(info.path) in kept]
    rows = []
    for info in finalists:
        outcome = evaluate(info, tasks, config.final_effort, config.final_attempts)
        rows.append(
            CheckpointRow(
                checkpoint=str(info.path),
                step=info.step,
                eval_loss=info.eval_loss,
                solved=outcome.solved,
                attempted=outcome.attempted,
                mean_output_tokens=outcome.mean_output_tokens,
            )
        )
    chosen = min(rows, key=_rank)
    tied, reason = tie_break(rows)
    with_loss = [c for c in checkpoints if c.eval_loss is not None]
    lowest = str(min(with_loss, key=lambda c: (_loss(c.eval_loss), c.step)).path) if with_loss else None
    return Selection(
        rows=rows,
        chosen=chosen.checkpoint,
        lowest_loss=lowest,
        tied=tied,
        tie_break=reason,
        shortlist=shortlist,
        subset=[t.name for t in subset],
        config=config,
    )


TRAINER_ONLY = ("optimizer.pt", "scheduler.pt", "trainer_state.json", "training_args.bin", "scaler.pt")
"""Files of a checkpoint folder that do not change what the model does (left out of its content hash)."""


def checkpoint_hash(path: Path) -> str:
    """sha256 of a checkpoint's model files (relative names and bytes; trainer state and RNG states left out)."""
    digest = hashlib.sha256()
    root = Path(path)
    for file in sorted(p for p in root.rglob("*") if p.is_file()):
        if file.name in TRAINER_ONLY or file.name.startswith("rng_state"):
            continue
        digest.update(file.relative_to(root).as_posix().encode() + b"\0")
        with file.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        digest.update(b"\0")
    return digest.hexdigest()


class HarnessEvaluator:
    """Runs the harness with a checkpoint's model on tasks at an effort, caching each task's records under
    `cache_dir/<checkpoint content hash>/<key of (task version, effort, attempts, harness)>.parquet`.

    `model_for` maps a checkpoint to the LLMConfig that serves it: `qaflow-local/<folder>` by default (with
    the local effort table), or an endpoint's served model name.
    """

    def __init__(
        self,
        *,
        cache_dir: Path,
        model_for: Callable[[CheckpointInfo], LLMConfig] | None = None,
        backend: str = "auto",
        harness: HarnessConfig | None = None,
        thinking_budgets: dict[Effort, int] | None = None,
    ):
        self.cache_dir = cache_dir
        self.model_for = model_for or local_model
        self.backend = backend
        self.harness = harness or HarnessConfig(max_turns=20)
        self.thinking_budgets = dict(thinking_budgets or {})
        """Thinking-token budget per effort of a local checkpoint, over sft.local_llm.DEFAULT_BUDGETS."""
        self.runs = 0
        """Attempts actually run (not read from the cache)."""
        self._hashes: dict[Path, str] = {}

    def content_hash(self, info: CheckpointInfo) -> str:
        path = Path(info.path).resolve()
        if path not in self._hashes:
            self._hashes[path] = checkpoint_hash(path)
        return self._hashes[path]

    def harness_for(self, config: LLMConfig) -> HarnessConfig:
        from sft.local_llm import PROVIDER, with_local_efforts

        if config.model.startswith(f"{PROVIDER}/"):
            return with_local_efforts(self.harness, self.thinking_budgets)
        return self.harness

    def cache_key(self, task: Task, effort: Effort, attempts: int, harness: HarnessConfig) -> str:
        settings = {
            "task_version": task.version,
            "effort": effort.value,
            "attempts": attempts,
            "harness": harness.model_dump(mode="json"),
        }
        return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:24]

    def __call__(self, info: CheckpointInfo, tasks: Sequence[Task], effort: Effort, attempts: int) -> EvalOutcome:
        folder = self.cache_dir / self.content_hash(info)[:24]
        config = self.model_for(info)
        harness = self.harness_for(config)
        frames = []
        checked = False
        for task in tasks:
            shard = folder / f"{self.cache_key(task, effort, attempts, harness)}.parquet"
            if not shard.is_file():
                if not checked:
                    check_efforts(config, [effort], harness.efforts, seed=harness.seed is not None)
                    checked = True
                records: list[RolloutRecord] = [
                    run_attempt(task, config, effort=effort, attempt=k, backend=self.backend, harness=harness)
                    for k in range(attempts)
                ]
                self.runs += attempts
                written = write_shard(records, folder, prefix="eval")
                if written is not None:
                    written.replace(shard)
            frames.append(read_rollouts(shard))
        frame = pl.concat(frames, how="diagonal_relaxed") if frames else pl.DataFrame()
        if frame.is_empty():
            return EvalOutcome(solved=0, attempted=len(tasks))
        solved = frame.filter(passed_expr())["task_version"].n_unique()
        completion = frame.select(pl.col("usage").list.eval(pl.element().struct.field("completion_tokens")).list.sum())
        mean_tokens = float(completion.to_series().cast(pl.Float64).mean() or 0.0)  # type: ignore[arg-type]
        return EvalOutcome(solved=solved, attempted=len(tasks), mean_output_tokens=mean_tokens)


def load_tasks(pool: Path) -> list[Task]:
    """Every task of a pool folder (solutions not needed)."""
    return [Task.load(d, require_solution=False) for d in find_task_dirs(pool)]


def accepted_tasks(pool: Path, statuses: Sequence[VersionStatus] = (VersionStatus.ACCEPTED,)) -> list[Task]:
    """The tasks of a pool folder whose current version has one of `statuses` in the pool ledger.

    Raises:
        ValueError: no such task (or no ledger), in one line naming the pool and what to do.
    """
    from qaflow.pool import DEFAULT_LEDGER, Pool

    wanted = "/".join(s.value for s in statuses)
    hint = "audit and accept tasks first (qaflow audit, qaflow accept), or pass --all-tasks"
    if not (Path(pool) / DEFAULT_LEDGER).is_file():
        raise ValueError(f"{pool}: no {wanted} task to evaluate on: the pool has no ledger; {hint}")
    with Pool.open(pool, create=False) as opened:
        current = {r.version for r in opened.list() if r.status in statuses}
    tasks = [t for t in load_tasks(pool) if t.version in current]
    if not tasks:
        raise ValueError(f"{pool}: no {wanted} task to evaluate on; {hint}")
    return tasks


def local_model(info: CheckpointInfo) -> LLMConfig:
    from sft.local_llm import PROVIDER, register_local_provider

    register_local_provider()
    return LLMConfig(model=f"{PROVIDER}/{Path(info.path).resolve()}", max_tokens=512, concurrency=1)
