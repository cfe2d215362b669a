"""The export stage: `OUT/final`, one folder per kept task version (accepted originals, accepted
repairs, hardened candidates) with the status it earned in `OUT/pool` in its own ledger, exported to
the Hugging Face datasets `OUT/datasets/{tasks,rl}`, and the filtered rollouts to `OUT/datasets/sft`
(as the export flags say). The tasks pass through; its output does not feed a next stage."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import polars as pl

from curation.sources import StageResult, empty_removed
from curation.stages.base import PipelineStep, StageContext, StageInfo, slug
from qaflow.ledger.status import StatusWriter


class ExportStep(PipelineStep):
    name = "export"
    feeds_next = False

    def run(self, ctx: StageContext, tasks: pl.DataFrame, info: StageInfo) -> tuple[StageResult, None]:
        from curation.export import NothingToExport, export_sft
        from curation.export_rl import export_rl
        from curation.export_tasks import export_tasks
        from qaflow.pool import Pool

        datasets = ctx.out / "datasets"
        written: dict[str, Any] = {}
        final = final_pool(ctx, tasks)
        with Pool.open(final) as pool:
            if ctx.config.export.tasks:
                report = export_tasks(pool, datasets / "tasks", status=("accepted", "candidate"), overwrite=True)
                written["tasks"] = report.rows if hasattr(report, "rows") else None
            if ctx.config.export.rl:
                report = export_rl(pool, datasets / "rl", status=("accepted",), overwrite=True)
                written["rl"] = report.rows if hasattr(report, "rows") else None
        kept_rollouts = (
            ctx.kept("rollout_filter") if (ctx.stage_dir("rollout_filter") / "kept.parquet").is_file() else None
        )
        if ctx.config.export.sft:
            if kept_rollouts is None or kept_rollouts.is_empty():
                written["sft"] = "skipped: no rollouts passed the filters"
            else:
                try:
                    report = export_sft(kept_rollouts, datasets / "sft", overwrite=True)
                    written["sft"] = report.rows if hasattr(report, "rows") else None
                except NothingToExport as e:
                    written["sft"] = f"skipped: {e}"
        info.info["datasets"] = written
        return StageResult(tasks, empty_removed()), None


def final_pool(ctx: StageContext, tasks: pl.DataFrame) -> Path:
    """OUT/final: one folder per kept task version (accepted originals, accepted repairs, hardened
    candidates), with the status it earned in OUT/pool recorded in its own ledger."""
    from qaflow.models.records import VersionStatus
    from qaflow.pool import Pool

    final = ctx.out / "final"
    shutil.rmtree(final, ignore_errors=True)
    final.mkdir(parents=True)
    wanted: dict[str, str] = {}
    for row in tasks.unique("version", keep="first").iter_rows(named=True):
        src = ctx.pool_dir / row["pool_path"]
        dest = final / f"{slug(row['source'])}" / src.name
        shutil.copytree(src, dest, symlinks=True, ignore=shutil.ignore_patterns(".qaflow"))
        wanted[row["version"]] = row.get("status") or "accepted"
    with Pool.open(final) as pool:
        pool.scan()
        for version in pool.ledger.versions():
            status = wanted.get(version.version)
            if status is not None and status != version.status.value:
                pool.ledger.set_status(
                    version.version,
                    VersionStatus(status),
                    by=StatusWriter.PIPELINE,
                    reason="pipeline: status in OUT/pool",
                )
    return final
