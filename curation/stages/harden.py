"""The harden stage: a process-chain hardened version of every task (`process_chain` in `OUT/pool`,
inside one recorded harden run), audited; each accepted one is added as a `candidate` row
(`<id>@process-chain`, `hardened_from` naming the original), the others leave with the reason. The
original rows pass through. Skipped when `harden` is off or there is nothing to harden."""

from __future__ import annotations

import polars as pl

from curation.sources import StageResult, empty_removed
from curation.stages.base import PipelineStep, StageContext, StageInfo


class HardenStep(PipelineStep):
    name = "harden"

    def run(self, ctx: StageContext, tasks: pl.DataFrame, info: StageInfo) -> tuple[StageResult, None]:
        if ctx.config.harden is None or not ctx.config.harden.process_chain or tasks.is_empty():
            info.skipped = "not configured" if ctx.config.harden is None else "nothing to harden"
            return StageResult(tasks, empty_removed()), None
        from curation.sources import removed_frame
        from qaflow.audit.service import audit_folders
        from qaflow.harden.process_chain import ProcessChainConfig, process_chain
        from qaflow.models.records import RunKind
        from qaflow.pool import Pool
        from qaflow.runs import open_run

        hardened, failures = [], []
        with Pool.open(ctx.pool_dir) as pool:
            with open_run(pool.ledger, RunKind.HARDEN, {"transform": "process_chain"}) as run:
                for row in tasks.iter_rows(named=True):
                    folder = ctx.pool_dir / row["pool_path"]
                    target = ctx.pool_dir / ".qaflow" / "hardened"
                    ctx.say(f"{row['name']}: hardening")
                    try:
                        rec = process_chain(pool, folder, target, run_id=run.run_id,
                                            config=ProcessChainConfig(backend=ctx.config.audit.backend))  # fmt: skip
                    except Exception as e:  # a task that cannot be chained keeps its original row
                        failures.append((f"{row['id']}@process-chain", "harden", f"{type(e).__name__}: {e}"))
                        continue
                    hardened.append((row, rec))
            folders = [ctx.pool_dir / rec.pool_path for _, rec in hardened]
            audits = audit_folders(pool, folders, ctx.config.audit, executor=ctx.executor, progress=ctx.say).audits
            verdicts = {a.version: a.verdict.value for a in audits}
        new_rows = []
        for row, rec in hardened:
            verdict = verdicts.get(rec.version)
            if verdict == "accepted":
                new_rows.append({**row, "id": f"{row['id']}@process-chain", "version": rec.version,
                                 "pool_path": rec.pool_path, "status": "candidate",
                                 "hardened_from": row["version"]})  # fmt: skip
            else:
                failures.append((f"{row['id']}@process-chain", "harden", f"hardened version audits {verdict}"))
        info.info["hardened"] = len(new_rows)
        merged = (
            pl.concat([tasks, pl.DataFrame(new_rows, infer_schema_length=None)], how="diagonal_relaxed")
            if new_rows
            else tasks
        )
        return StageResult(merged, removed_frame(failures)), None
