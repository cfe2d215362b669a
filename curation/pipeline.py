"""`qaflow pipeline run CONFIG.yaml`: the curation stages as one resumable batch job.

source -> dedup -> decontam -> length -> mix -> augment -> audit -> repair -> harden -> rollout ->
rollout filter -> export. Each stage writes `OUT/stages/NN-name/` (kept.parquet, removed.parquet,
info.json); a stage whose info.json says done is not redone on a rerun, so a failed stage can be
rerun without redoing the finished ones (`--from STAGE` redoes from there). Stages that need a model
(augment, rollout) are skipped with a note when none is configured. Sandboxed work (audit, repair,
harden, rollout) happens in `OUT/pool`, a copy of the selected tasks with its own ledger; source
folders are never written. The funnel counts tasks per source after every stage (and rollouts per
source through the rollout stages) and is drawn as a Sankey-style picture.

This module is the runner: the stage order (`STAGE_STEPS`), resuming, timing, saving each stage's
output, the funnel and the report. Each stage is a `PipelineStep` in its own module under
`curation.stages`; the config models live in `curation.stages.config` and are re-exported here.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl
from pydantic import BaseModel, Field

from curation.sources import StageResult
from curation.stages.audit import AuditStep
from curation.stages.augment import AugmentStep
from curation.stages.base import PipelineStep, Progress, StageContext, StageInfo
from curation.stages.config import (
    DecontamStage,
    ExportStage,
    HardenStage,
    LengthStage,
    PipelineConfig,
    RepairStage,
    RolloutStage,
)
from curation.stages.decontam import DecontamStep
from curation.stages.dedup import DedupStep
from curation.stages.export import ExportStep
from curation.stages.harden import HardenStep
from curation.stages.length import LengthStep
from curation.stages.mix import MixStep
from curation.stages.repair import RepairStep
from curation.stages.rollout import RolloutStep
from curation.stages.rollout_filter import RolloutFilterStep
from curation.stages.source import SourceStep

__all__ = [
    "STAGES",
    "STAGE_STEPS",
    "DecontamStage",
    "ExportStage",
    "HardenStage",
    "LengthStage",
    "Pipeline",
    "PipelineConfig",
    "PipelineReport",
    "PipelineStep",
    "Progress",
    "RepairStage",
    "RolloutStage",
    "StageInfo",
]

STAGE_STEPS: tuple[PipelineStep, ...] = (
    SourceStep(),
    DedupStep(),
    DecontamStep(),
    LengthStep(),
    MixStep(),
    AugmentStep(),
    AuditStep(),
    RepairStep(),
    HardenStep(),
    RolloutStep(),
    RolloutFilterStep(),
    ExportStep(),
)
"""The stages in the order they run; their position numbers their folders (`OUT/stages/NN-name`)."""

STAGES = tuple(step.name for step in STAGE_STEPS)


class PipelineReport(BaseModel):
    name: str
    output_dir: Path
    stages: list[StageInfo] = Field(default_factory=list)
    datasets: dict[str, str] = Field(default_factory=dict)
    skipped_datasets: dict[str, str] = Field(
        default_factory=dict, description="Datasets the config asks for that were not written, with the reason."
    )


class Pipeline:
    def __init__(
        self,
        config: PipelineConfig,
        *,
        executor: Any = None,
        progress: Progress | None = None,
        on_start: Callable[[str, int], None] | None = None,
        on_stage: Callable[[StageInfo], None] | None = None,
    ):
        """`progress` gets the stages' messages (one per task audited, repaired, hardened...), `on_start` each stage
        that runs (its name and rows in) and `on_stage` each stage's info when it is done (run or reused)."""
        self.config = config
        self.on_start = on_start or (lambda _stage, _rows: None)
        self.on_stage = on_stage or (lambda _info: None)
        self.out = Path(config.output_dir).resolve()
        self.pool_dir = self.out / "pool"
        self.executor = executor
        self.say = progress or (lambda _m: None)
        self.ctx = StageContext(
            config=config, out=self.out, pool_dir=self.pool_dir, executor=executor, say=self.say, stages=STAGES
        )

    # -- bookkeeping --------------------------------------------------------------------------

    def stage_dir(self, stage: str) -> Path:
        return self.ctx.stage_dir(stage)

    def load_info(self, stage: str) -> StageInfo | None:
        path = self.stage_dir(stage) / "info.json"
        if not path.is_file():
            return None
        info = StageInfo.model_validate_json(path.read_text())
        return info if info.done else None

    def save(self, stage: str, result: StageResult, info: StageInfo, *, unit_frame: pl.DataFrame | None = None) -> None:
        folder = self.stage_dir(stage)
        folder.mkdir(parents=True, exist_ok=True)
        kept = result.kept
        kept.write_parquet(folder / "kept.parquet")
        result.removed.write_parquet(folder / "removed.parquet")
        counted = unit_frame if unit_frame is not None else kept
        info.rows_out = counted.height
        if "source" in counted.columns:
            info.by_source = dict(counted.group_by("source").len().sort("source").iter_rows())
        info.info = {**info.info, **_jsonable(result.info)}
        info.done = True
        (folder / "info.json").write_text(info.model_dump_json(indent=2))

    def kept(self, stage: str) -> pl.DataFrame:
        return self.ctx.kept(stage)

    # -- running ------------------------------------------------------------------------------

    def run(self, *, start_from: str | None = None) -> PipelineReport:
        if start_from is not None:
            if start_from not in STAGES:
                raise ValueError(f"unknown stage {start_from!r}; stages: {', '.join(STAGES)}")
            for stage in STAGES[STAGES.index(start_from) :]:
                shutil.rmtree(self.stage_dir(stage), ignore_errors=True)
        self.out.mkdir(parents=True, exist_ok=True)
        report = PipelineReport(name=self.config.name, output_dir=self.out)
        tasks = pl.DataFrame()
        for step in STAGE_STEPS:
            stage = step.name
            done = self.load_info(stage)
            if done is not None:
                done.reused = True
                report.stages.append(done)
                self.on_stage(done)
                tasks = self.kept(stage) if step.feeds_next else tasks
                continue
            self.on_start(stage, tasks.height)
            t0 = time.perf_counter()
            info = StageInfo(stage=stage, rows_in=tasks.height, unit=step.unit)
            result, unit_frame = step.run(self.ctx, tasks, info)
            info.seconds = round(time.perf_counter() - t0, 2)
            self.save(stage, result, info, unit_frame=unit_frame)
            report.stages.append(info)
            self.on_stage(info)
            if step.feeds_next:
                tasks = result.kept
        report.datasets = self._datasets()
        export = next((s for s in report.stages if s.stage == ExportStep.name), None)
        report.skipped_datasets = dict(export.info.get("skipped_datasets", {})) if export else {}
        self._write_funnel(report)
        return report

    # -- outputs ------------------------------------------------------------------------------

    def _datasets(self) -> dict[str, str]:
        root = self.out / "datasets"
        return {p.name: str(p) for p in sorted(root.iterdir())} if root.is_dir() else {}

    def _write_funnel(self, report: PipelineReport) -> None:
        from curation.pipeline_plot import draw_sankey

        rows = [
            {"stage": s.stage, "unit": s.unit, "source": src, "rows": n}
            for s in report.stages
            for src, n in (s.by_source or {"(none)": 0}).items()
        ]
        (self.out / "funnel.json").write_text(
            json.dumps([s.model_dump(mode="json") for s in report.stages], indent=2, default=str)
        )
        if rows:
            pl.DataFrame(rows).write_csv(self.out / "funnel.csv")
        draw_sankey(report, self.out / "funnel.png")
        (self.out / "report.json").write_text(report.model_dump_json(indent=2))


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))
