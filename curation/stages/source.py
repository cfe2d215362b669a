"""The source stage: collect the tasks of every configured source (`collect_tasks`); tasks that cannot
be loaded leave with a reason, and `rows_in` counts them too."""

from __future__ import annotations

import polars as pl

from curation.sources import StageResult
from curation.stages.base import PipelineStep, StageContext, StageInfo


class SourceStep(PipelineStep):
    name = "source"

    def run(self, ctx: StageContext, tasks: pl.DataFrame, info: StageInfo) -> tuple[StageResult, None]:
        from curation.sources import collect_tasks

        result = collect_tasks(ctx.config.sources)
        info.rows_in = result.kept.height + result.removed.height
        return result, None
