"""The dedup stage: exact and near-duplicate removal (`dedup_tasks`) with the config's `dedup:`
settings; skipped when `dedup` is null."""

from __future__ import annotations

import polars as pl

from curation.sources import StageResult, empty_removed
from curation.stages.base import PipelineStep, StageContext, StageInfo


class DedupStep(PipelineStep):
    name = "dedup"

    def run(self, ctx: StageContext, tasks: pl.DataFrame, info: StageInfo) -> tuple[StageResult, None]:
        if ctx.config.dedup is None:
            info.skipped = "not configured"
            return StageResult(tasks, empty_removed()), None
        from curation.dedup import dedup_tasks

        return dedup_tasks(tasks, ctx.config.dedup), None
