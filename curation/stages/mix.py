"""The mix stage: weights, caps, top-k and upsampling (`mix_tasks`). Skipped when `mix` is not configured.

An eval split, when the mix makes one, is written as `eval.parquet` in the stage's folder and its tasks go on
with the train mix (they are audited, repaired, hardened and rolled out like the rest): the export stage makes
them the test split of every dataset."""

from __future__ import annotations

import polars as pl

from curation.sources import StageResult, empty_removed
from curation.stages.base import PipelineStep, StageContext, StageInfo


class MixStep(PipelineStep):
    name = "mix"

    def run(self, ctx: StageContext, tasks: pl.DataFrame, info: StageInfo) -> tuple[StageResult, None]:
        if ctx.config.mix is None:
            info.skipped = "not configured"
            return StageResult(tasks, empty_removed()), None
        from curation.mixing import mix_tasks

        mixed = mix_tasks(tasks, ctx.config.mix)
        if mixed.eval is not None:
            folder = ctx.stage_dir("mix")
            folder.mkdir(parents=True, exist_ok=True)
            mixed.eval.write_parquet(folder / "eval.parquet")
            return StageResult(
                pl.concat([mixed.kept, mixed.eval], how="diagonal_relaxed"), mixed.removed, mixed.info
            ), None
        return StageResult(mixed.kept, mixed.removed, mixed.info), None
