"""The length stage: keep the tasks whose instruction is within the configured character and word
bounds (`length_filter`); skipped when `length` is not configured."""

from __future__ import annotations

import polars as pl

from curation.sources import StageResult, empty_removed
from curation.stages.base import PipelineStep, StageContext, StageInfo


class LengthStep(PipelineStep):
    name = "length"

    def run(self, ctx: StageContext, tasks: pl.DataFrame, info: StageInfo) -> tuple[StageResult, None]:
        if ctx.config.length is None:
            info.skipped = "not configured"
            return StageResult(tasks, empty_removed()), None
        from curation.task_filters import length_filter

        return length_filter(tasks, **ctx.config.length.model_dump()), None
