"""The audit stage: copy every distinct task folder into `OUT/pool/<source>/<folder>` (source folders
are never written), audit the copies there (`audit_folders`, on the runner's executor), attach each
task's status and keep the accepted tasks and those that need repair (`audit_filter`)."""

from __future__ import annotations

import shutil
from pathlib import Path

import polars as pl

from curation.sources import StageResult
from curation.stages.base import PipelineStep, StageContext, StageInfo, counts, slug


class AuditStep(PipelineStep):
    name = "audit"

    def run(self, ctx: StageContext, tasks: pl.DataFrame, info: StageInfo) -> tuple[StageResult, None]:
        from curation.task_filters import attach_status, audit_filter
        from qaflow.audit.service import audit_folders
        from qaflow.pool import Pool

        placed = materialise(ctx, tasks)
        tasks = tasks.with_columns(pl.col("path").replace_strict(placed, default=None).alias("pool_path"))
        with Pool.open(ctx.pool_dir) as pool:
            folders = sorted({ctx.pool_dir / p for p in placed.values()})
            audits = audit_folders(pool, folders, ctx.config.audit, executor=ctx.executor, progress=ctx.say).audits
            info.info["verdicts"] = counts(a.verdict.value for a in audits)
            tasks = attach_status(tasks, pool.ledger)
        return audit_filter(tasks, allowed=("accepted", "needs_repair")), None


def materialise(ctx: StageContext, tasks: pl.DataFrame) -> dict[str, str]:
    """Copy each distinct task folder into OUT/pool/<source>/<folder>; returns path -> pool-relative path."""
    placed: dict[str, str] = {}
    for row in tasks.select("source", "path").unique().iter_rows(named=True):
        if not row["path"]:
            continue
        src = Path(row["path"])
        rel = f"{slug(row['source'])}/{src.name}"
        dest = ctx.pool_dir / rel
        if not dest.exists():
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copytree(src, dest, symlinks=True, ignore=shutil.ignore_patterns(".qaflow"))
        placed[row["path"]] = rel
    return placed
