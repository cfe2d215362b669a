"""The augment stage: LLM rewrites of the instructions in the configured styles (`augment_tasks`),
re-audited before they are kept and added to the tasks; skipped when no style or no model is set."""

from __future__ import annotations

import polars as pl

from curation.sources import StageResult, empty_removed
from curation.stages.base import PipelineStep, StageContext, StageInfo


class AugmentStep(PipelineStep):
    name = "augment"

    def run(self, ctx: StageContext, tasks: pl.DataFrame, info: StageInfo) -> tuple[StageResult, None]:
        if not ctx.config.augment:
            info.skipped = "no augmentation styles configured"
            return StageResult(tasks, empty_removed()), None
        if not ctx.config.model:
            info.skipped = "needs a model (set `model`): augmentation skipped"
            return StageResult(tasks, empty_removed()), None
        from curation.augment import AugmentConfig, augment_tasks
        from qaflow.llm import LLMConfig

        config = AugmentConfig(
            out_dir=ctx.out / "augmented",
            llm=LLMConfig(model=ctx.config.model),
            styles=ctx.config.augment,
            audit=ctx.config.audit,
        )
        result = augment_tasks(tasks, config, existing=tasks["instruction"].to_list(), progress=ctx.say)
        merged = pl.concat([tasks, result.kept], how="diagonal_relaxed")
        return StageResult(merged, result.removed, result.info), None
