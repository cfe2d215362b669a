"""The rollout_filter stage: the rollout filters (`apply_filters`, as `qaflow filter --config`) over the
rollout stage's kept rollouts; the filters' funnel is written as `funnel.json` in the stage's folder.
Counts rollouts, not tasks, and its output does not feed the next stage (export reads it from the stage
folder). Skipped when there are no rollouts or no filters are configured."""

from __future__ import annotations

import json

import polars as pl

from curation.sources import StageResult, empty_removed
from curation.stages.base import PipelineStep, StageContext, StageInfo


class RolloutFilterStep(PipelineStep):
    name = "rollout_filter"
    unit = "rollouts"
    feeds_next = False

    def run(self, ctx: StageContext, tasks: pl.DataFrame, info: StageInfo) -> tuple[StageResult, pl.DataFrame]:
        from qaflow.models.frame import empty_frame

        rollouts = ctx.kept("rollout") if (ctx.stage_dir("rollout") / "kept.parquet").is_file() else empty_frame()
        info.rows_in = rollouts.height
        if rollouts.is_empty() or ctx.config.rollout_filter is None:
            info.skipped = "no rollouts" if rollouts.is_empty() else "not configured"
            return StageResult(rollouts, empty_removed()), rollouts
        from curation.filters import apply_filters

        result = apply_filters(rollouts, ctx.config.rollout_filter)
        (ctx.stage_dir("rollout_filter")).mkdir(parents=True, exist_ok=True)
        (ctx.stage_dir("rollout_filter") / "funnel.json").write_text(
            json.dumps(result.summary(), indent=2, default=str)
        )
        removed = result.removed.select(pl.col("rollout_id").alias("id"), pl.lit("rollout_filter").alias("stage"),
                                        pl.format("{}: {}", "rule", "reason").alias("reason"))  # fmt: skip
        return StageResult(result.kept, removed), result.kept
