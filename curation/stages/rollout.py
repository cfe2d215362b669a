"""The rollout stage: rollouts of the accepted tasks (or the configured `statuses`) with the pipeline's
model (`run_rollouts` on `OUT/pool`, the config's `rollout:` settings, backend, offline and network
following `audit:` unless set there); kept are that model's rollouts. Counts rollouts, not tasks, and
its output does not feed the next stage. Skipped when no model is set."""

from __future__ import annotations

import polars as pl

from curation.sources import StageResult, empty_removed
from curation.stages.base import PipelineStep, StageContext, StageInfo
from qaflow.llm import LLMConfig
from qaflow.rollouts.job import RolloutJobConfig


class RolloutStep(PipelineStep):
    name = "rollout"
    unit = "rollouts"
    feeds_next = False

    def run(self, ctx: StageContext, tasks: pl.DataFrame, info: StageInfo) -> tuple[StageResult, pl.DataFrame]:
        from qaflow.models.frame import empty_frame, records_to_frame

        if ctx.config.rollout is None or not ctx.config.model:
            info.skipped = "needs a model (set `model`): no rollouts" if ctx.config.rollout else "not configured"
            return StageResult(empty_frame(), empty_removed()), empty_frame()
        from qaflow.models.records import VersionStatus
        from qaflow.pool import Pool
        from qaflow.rollouts.job import run_rollouts

        stage = ctx.config.rollout
        inherited = {k: getattr(ctx.config.audit, k) for k in ("backend", "offline", "network")}
        job = RolloutJobConfig.model_validate(
            {
                **{k: v for k, v in inherited.items() if k not in stage.model_fields_set},
                **stage.model_dump(exclude={"model"}, exclude_unset=True),
                "model": LLMConfig(model=ctx.config.model),
                "statuses": stage.statuses or [VersionStatus.ACCEPTED],
            }
        )
        with Pool.open(ctx.pool_dir) as pool:
            run_rollouts(pool, job, executor=ctx.executor)
            frame = records_to_frame(pool.ledger.rollouts())
        frame = frame.filter(pl.col("model") == ctx.config.model)
        return StageResult(frame, empty_removed()), frame
