"""The export stage: `OUT/final`, one folder per kept task version (accepted originals, accepted
repairs, hardened candidates) with the status it earned in `OUT/pool` in its own ledger, exported to
the Hugging Face datasets `OUT/datasets/{tasks,rl}`, and the filtered rollouts to `OUT/datasets/sft`
(as the export flags say). The tasks pass through; its output does not feed a next stage.

The datasets hold accepted versions only; `export.include_candidates` (`pipeline run --include-candidates`)
adds the hardened candidates to the tasks dataset. Every row's `source` is the pipeline source the task came
from (as the funnel counts it), not the pool's `local`. A dataset that cannot be written is skipped with its
reason (`skipped_datasets` in the stage's info).

Every dataset gets the same test split, by task: the tasks of the mix's eval split when it made one (they and
their augmented variants), else `export.test_fraction` of the tasks. Licences come from the sources."""

from __future__ import annotations

import shutil
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from curation.sources import StageResult, empty_removed
from curation.stages.base import PipelineStep, StageContext, StageInfo, slug
from qaflow.ledger.status import StatusWriter
from qaflow.models.records import VersionStatus
from qaflow.pool import Pool

if TYPE_CHECKING:
    from curation.export import FunnelStep
    from curation.export.common import SplitSpec


class ExportStep(PipelineStep):
    name = "export"
    feeds_next = False

    def run(self, ctx: StageContext, tasks: pl.DataFrame, info: StageInfo) -> tuple[StageResult, None]:
        from curation.export import NothingToExport, export_sft
        from curation.export.rl import export_rl
        from curation.export.tasks import export_tasks

        datasets = ctx.out / "datasets"
        written: dict[str, Any] = {}
        skipped: dict[str, str] = {}
        exposed: list[str] = []
        final = final_pool(ctx, tasks, exposed)
        info.info["harness_exposed"] = sorted(exposed)
        licences = dict(tasks.select("version", "licence").iter_rows()) if "licence" in tasks.columns else {}
        sources = dict(tasks.select("version", "source").iter_rows())
        export = ctx.config.export
        statuses = ("accepted", "candidate") if export.include_candidates else ("accepted",)
        with Pool.open(final) as pool:
            split = self.split(ctx, tasks, pool)
            info.info["test_tasks"] = sorted(split.test_tasks or ()) if split.test_tasks is not None else None
            candidates = sum(1 for v in pool.list() if v.status is VersionStatus.CANDIDATE)
            if candidates and not export.include_candidates:
                info.info["candidates_left_out"] = candidates
            common: dict[str, Any] = {"licences": licences, "sources": sources, "split": split, "overwrite": True}
            writers = {
                "tasks": (export.tasks, partial(export_tasks, pool, datasets / "tasks", status=statuses)),
                "rl": (export.rl, partial(export_rl, pool, datasets / "rl", status=("accepted",))),
            }
            for name, (wanted, write) in writers.items():
                if wanted:
                    try:
                        written[name] = write(**common).splits
                        ctx.say(f"{name} dataset: {rows_by_split(written[name])}")
                    except NothingToExport as e:
                        skipped[name] = e.reason
        kept_rollouts = (
            ctx.kept("rollout_filter") if (ctx.stage_dir("rollout_filter") / "kept.parquet").is_file() else None
        )
        if export.sft:
            if kept_rollouts is None or kept_rollouts.is_empty():
                skipped["sft"] = "no rollouts passed the filters"
            else:
                try:
                    report = export_sft(
                        kept_rollouts,
                        datasets / "sft",
                        pool=final,
                        licences=licences,
                        sources=sources,
                        split=split,
                        funnel=self.funnel(ctx),
                        overwrite=True,
                    )
                    written["sft"] = report.splits
                    ctx.say(f"sft dataset: {rows_by_split(report.splits)}")
                except NothingToExport as e:
                    skipped["sft"] = e.reason
        info.info["datasets"] = written | {name: f"skipped: {why}" for name, why in skipped.items()}
        info.info["skipped_datasets"] = skipped
        return StageResult(tasks, empty_removed()), None

    @staticmethod
    def split(ctx: StageContext, tasks: pl.DataFrame, pool: Pool) -> SplitSpec:
        """The mix's eval tasks (by the task names they have in the final pool), else a fraction of all tasks."""
        from curation.export.common import SplitSpec

        eval_file = ctx.stage_dir("mix") / "eval.parquet"
        if not eval_file.is_file():
            return SplitSpec(test_fraction=ctx.config.export.test_fraction, seed=ctx.config.export.split_seed)
        held = set(pl.read_parquet(eval_file, columns=["id"])["id"].to_list())
        roots = tasks.select("version", pl.col("id").str.split("~").list.first().alias("root"))
        versions = {v for v, root in roots.iter_rows() if root in held}
        return SplitSpec(test_tasks=frozenset(v.name for v in pool.ledger.versions() if v.version in versions))

    @staticmethod
    def funnel(ctx: StageContext) -> list[FunnelStep] | None:
        """The rollout filter's funnel, for the SFT card (None when the stage wrote none)."""
        from curation.export import load_funnel

        path = ctx.stage_dir("rollout_filter") / "funnel.json"
        return load_funnel(path) if path.is_file() else None


def rows_by_split(splits: dict[str, int]) -> str:
    """`train 12, test 3 rows`."""
    return ", ".join(f"{split} {rows}" for split, rows in splits.items()) + " rows"


def final_pool(ctx: StageContext, tasks: pl.DataFrame, exposed: list[str] | None = None) -> Path:
    """OUT/final: one folder per kept task version (accepted originals, accepted repairs, hardened
    candidates), with the status it earned in OUT/pool recorded in its own ledger (an accepted version a proven
    harness hole reaches is a candidate there, unless `export.allow_harness_holes`; its name is appended to
    `exposed`). Where that status came
    from an audit, that audit (of OUT/pool's ledger, with its run id there) is carried over: the exports read the
    audit verdict from it."""
    from qaflow.harden.gate import clean_reason, harness_exposure

    final = ctx.out / "final"
    exposed = [] if exposed is None else exposed
    shutil.rmtree(final, ignore_errors=True)
    final.mkdir(parents=True)
    wanted: dict[str, str] = {}
    for row in tasks.unique("version", keep="first").iter_rows(named=True):
        src = ctx.pool_dir / row["pool_path"]
        dest = final / f"{slug(row['source'])}" / src.name
        shutil.copytree(src, dest, symlinks=True, ignore=shutil.ignore_patterns(".qaflow"))
        wanted[row["version"]] = row.get("status") or "accepted"
    with Pool.open(ctx.pool_dir, create=False) as working:
        audits = working.ledger.latest_audits()
        exposure = harness_exposure(working.ledger, wanted)  # the evidence stays in OUT/pool's ledger
    allowed = ctx.config.export.allow_harness_holes
    with Pool.open(final) as pool:
        pool.scan()
        for version in pool.ledger.versions():
            status = wanted.get(version.version)
            if status is not None and status != version.status.value:
                audit = audits.get(version.version)
                reason, run_id = ("pipeline: status in OUT/pool", None) if audit is None else (
                    f"audit: {audit.summary}", audit.run_id)  # fmt: skip
                if audit is not None:
                    pool.ledger.add_audit(audit.model_copy(update={"id": None}))
                pool.ledger.set_status(
                    version.version, VersionStatus(status), by=StatusWriter.PIPELINE, reason=reason, run_id=run_id
                )
            why = clean_reason(VersionStatus.ACCEPTED, exposure.get(version.version, []), allow_harness_holes=allowed)
            if status == VersionStatus.ACCEPTED.value and why is not None:  # the audit's verdict stays in the log
                pool.ledger.set_status(
                    version.version, VersionStatus.CANDIDATE, by=StatusWriter.PIPELINE, reason=f"pipeline: {why}"
                )
                exposed.append(version.name)
    return final
