"""`qaflow sft select`: choose the checkpoint that solves the most held-out tasks, not the lowest loss.

Each checkpoint is evaluated by the agent harness on a task pool (served by an OpenAI-compatible
endpoint, or loaded locally through the `qaflow-local` litellm provider). The choice: most tasks
solved; ties go to the lower validation loss, then fewer mean output tokens, then the earlier step.
The lowest-loss checkpoint is reported even when it is not chosen.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import polars as pl
from pydantic import BaseModel, Field

from qaflow.agents.harness import HarnessConfig
from qaflow.llm import LLMConfig
from qaflow.models.frame import read_rollouts, write_shard
from qaflow.models.rollout import Effort, RolloutRecord
from qaflow.rollouts.attempt import run_attempt
from qaflow.rollouts.stats import passed_expr
from qaflow.task import Task, find_task_dirs
from sft.train import CheckpointInfo


class EvalOutcome(BaseModel):
    solved: int
    attempted: int
    mean_output_tokens: float = 0.0


class CheckpointRow(BaseModel):
    checkpoint: str
    step: int
    eval_loss: float | None
    solved: int
    attempted: int
    mean_output_tokens: float


class Selection(BaseModel):
    rows: list[CheckpointRow] = Field(default_factory=list)
    chosen: str
    lowest_loss: str | None = None

    def frame(self) -> pl.DataFrame:
        return pl.DataFrame([r.model_dump() for r in self.rows])


Evaluator = Callable[[CheckpointInfo], EvalOutcome]


def _rank(row: CheckpointRow) -> tuple[float, float, float, int]:
    loss = row.eval_loss if row.eval_loss is not None else float("inf")
    return (-row.solved, loss, row.mean_output_tokens, row.step)


def select_checkpoint(checkpoints: Sequence[CheckpointInfo], evaluate: Evaluator) -> Selection:
    """Evaluate every checkpoint and choose (see the module docstring).

    Raises:
        ValueError: no checkpoint to choose from.
    """
    if not checkpoints:
        raise ValueError("no checkpoint to evaluate")
    rows = []
    for info in checkpoints:
        outcome = evaluate(info)
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
    with_loss = [r for r in rows if r.eval_loss is not None]
    lowest = min(with_loss, key=lambda r: (r.eval_loss, r.step)).checkpoint if with_loss else None
    return Selection(rows=rows, chosen=chosen.checkpoint, lowest_loss=lowest)


class HarnessEvaluator:
    """Runs the harness with a checkpoint's model on every task of a pool; caches records per checkpoint.

    `model_for` maps a checkpoint to the LLMConfig that serves it: `qaflow-local/<folder>` by default, or
    an endpoint's served model name.
    """

    def __init__(
        self,
        pool: Path,
        *,
        cache_dir: Path,
        model_for: Callable[[CheckpointInfo], LLMConfig] | None = None,
        backend: str = "auto",
        attempts: int = 1,
        effort: Effort = Effort.OFF,
        harness: HarnessConfig | None = None,
    ):
        self.tasks = [Task.load(d, require_solution=False) for d in find_task_dirs(pool)]
        self.cache_dir = cache_dir
        self.model_for = model_for or local_model
        self.backend = backend
        self.attempts = attempts
        self.effort = effort
        self.harness = harness or HarnessConfig(max_turns=20)

    def __call__(self, info: CheckpointInfo) -> EvalOutcome:
        folder = self.cache_dir / info.path.name
        if folder.is_dir() and any(folder.glob("*.parquet")):
            frame = read_rollouts(folder)
        else:
            config = self.model_for(info)
            records: list[RolloutRecord] = [
                run_attempt(task, config, effort=self.effort, attempt=k, backend=self.backend, harness=self.harness)
                for task in self.tasks
                for k in range(self.attempts)
            ]
            write_shard(records, folder, prefix="eval")
            frame = read_rollouts(folder)
        solved = frame.filter(passed_expr())["task"].n_unique()
        completion = frame.select(pl.col("usage").list.eval(pl.element().struct.field("completion_tokens")).list.sum())
        mean_tokens = float(completion.to_series().mean() or 0.0)
        return EvalOutcome(solved=solved, attempted=len(self.tasks), mean_output_tokens=mean_tokens)


def local_model(info: CheckpointInfo) -> LLMConfig:
    from sft.local_llm import PROVIDER, register_local_provider

    register_local_provider()
    return LLMConfig(model=f"{PROVIDER}/{Path(info.path).resolve()}", max_tokens=512, concurrency=1)
