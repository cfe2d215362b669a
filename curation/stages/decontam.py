"""The decontam stage: load the configured benchmark sets and drop the tasks that overlap them
(`decontaminate`); skipped when no benchmark set is configured."""

from __future__ import annotations

import polars as pl

from curation.sources import StageResult, empty_removed
from curation.stages.base import PipelineStep, StageContext, StageInfo


class DecontamStep(PipelineStep):
    name = "decontam"

    def run(self, ctx: StageContext, tasks: pl.DataFrame, info: StageInfo) -> tuple[StageResult, None]:
        if ctx.config.decontam is None:
            info.skipped = "no benchmark sets configured"
            return StageResult(tasks, empty_removed()), None
        from curation.decontam import decontaminate, load_benchmark

        items = []
        for spec in ctx.config.decontam.benchmarks:
            items.extend(load_benchmark(spec))
        return decontaminate(tasks, items, ctx.config.decontam.config), None
