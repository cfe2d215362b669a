"""The repair stage: rule repairs, in bounded rounds, of the tasks the audit says need repair
(`repair_pool` on `OUT/pool`); a task whose repair is accepted continues as its repaired version
(`repaired_from` names the original), the others leave with the reason. Accepted tasks pass through."""

from __future__ import annotations

import polars as pl

from curation.sources import StageResult
from curation.stages.base import PipelineStep, StageContext, StageInfo, counts, rel


class RepairStep(PipelineStep):
    name = "repair"

    def run(self, ctx: StageContext, tasks: pl.DataFrame, info: StageInfo) -> tuple[StageResult, None]:
        from curation.sources import removed_frame
        from qaflow.pool import Pool

        needing = tasks.filter(pl.col("status") == "needs_repair")
        if ctx.config.repair is None or needing.is_empty():
            info.skipped = "not configured" if ctx.config.repair is None else "no task needs repair"
            kept = tasks.filter(pl.col("status") == "accepted")
            return StageResult(
                kept, removed_frame((r, "repair", "needs repair; repair not run") for r in needing["id"])
            ), None
        from qaflow.repair.rounds import repair_pool
        from qaflow.repair.rules import RuleRepairer

        config = ctx.config.audit
        with Pool.open(ctx.pool_dir) as pool:
            records = repair_pool(
                pool,
                repairer=RuleRepairer(),
                audit_config=config,
                out_dir=ctx.pool_dir / ".qaflow" / "repaired",
                max_rounds=ctx.config.repair.max_rounds,
                progress=ctx.say,
                **({"executor": ctx.executor} if ctx.executor is not None else {}),
            )
        by_version = {r.original_version: r for r in records}
        rows, removed = [], []
        for row in tasks.iter_rows(named=True):
            if row["status"] == "accepted":
                rows.append(row)
                continue
            record = by_version.get(row["version"])
            if record is not None and record.outcome.value == "accepted" and record.final_version:
                path = rel(record.final_path, ctx.pool_dir)
                update = {"version": record.final_version, "status": "accepted", "pool_path": path}
                rows.append({**row, **update, "repaired_from": row["version"]})
            else:
                reason = f"unresolved: {record.reason.value if record and record.reason else 'not repaired'}"
                removed.append((row["id"], "repair", reason))
        info.info["outcomes"] = counts(r.outcome.value for r in records)
        return StageResult(pl.DataFrame(rows, infer_schema_length=None), removed_frame(removed)), None
