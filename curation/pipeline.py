"""`qaflow pipeline run CONFIG.yaml`: the curation stages as one resumable batch job.

source -> dedup -> decontam -> length -> mix -> augment -> audit -> repair -> harden -> rollout ->
rollout filter -> export. Each stage writes `OUT/stages/NN-name/` (kept.parquet, removed.parquet,
info.json); a stage whose info.json says done is not redone on a rerun, so a failed stage can be
rerun without redoing the finished ones (`--from STAGE` redoes from there). Stages that need a model
(augment, rollout) are skipped with a note when none is configured. Sandboxed work (audit, repair,
harden, rollout) happens in `OUT/pool`, a copy of the selected tasks with its own ledger; source
folders are never written. The funnel counts tasks per source after every stage (and rollouts per
source through the rollout stages) and is drawn as a Sankey-style picture.

Size (over 500 lines on purpose): the stage methods share the runner's state (output folders, the
executor, progress, resume markers); each is short and delegates to its stage module.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import polars as pl
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from curation.decontam import BenchmarkSpec, DecontamConfig
from curation.dedup import DedupConfig
from curation.filters import FilterConfig
from curation.mixing import MixConfig
from curation.sources import SourceSpec, StageResult, empty_removed
from qaflow.audit.runner import AuditConfig
from qaflow.config_file import load_yaml_config, validation_reason
from qaflow.errors import ConfigError
from qaflow.ledger.status import StatusWriter
from qaflow.llm import LLMConfig
from qaflow.rollouts.job import RolloutJobConfig

STAGES = (
    "source",
    "dedup",
    "decontam",
    "length",
    "mix",
    "augment",
    "audit",
    "repair",
    "harden",
    "rollout",
    "rollout_filter",
    "export",
)


class LengthStage(BaseModel):
    model_config = ConfigDict(extra="forbid")
    min_chars: int | None = None
    max_chars: int | None = None
    min_words: int | None = None
    max_words: int | None = None


class DecontamStage(BaseModel):
    """`qaflow curate decontam`'s benchmarks and settings, by the same names."""

    model_config = ConfigDict(extra="forbid")
    benchmarks: list[BenchmarkSpec]
    config: DecontamConfig = Field(default_factory=DecontamConfig)


class RepairStage(BaseModel):
    model_config = ConfigDict(extra="forbid")
    max_rounds: int = Field(2, ge=1)


class HardenStage(BaseModel):
    model_config = ConfigDict(extra="forbid")
    process_chain: bool = True


class RolloutStage(RolloutJobConfig):
    """`qaflow rollout`'s settings (`RolloutJobConfig`, same names and defaults). The model is the
    pipeline's `model`; backend, offline and network follow `audit:` unless set here; only accepted
    tasks are rolled out unless `statuses` says otherwise."""

    model: LLMConfig | None = None


class ExportStage(BaseModel):
    model_config = ConfigDict(extra="forbid")
    tasks: bool = True
    sft: bool = True
    rl: bool = True


class PipelineConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    output_dir: Path
    model: str | None = Field(None, description="litellm model for augment and rollout; None skips those stages.")
    sources: list[SourceSpec]
    dedup: DedupConfig | None = Field(default_factory=DedupConfig)
    decontam: DecontamStage | None = None
    length: LengthStage | None = None
    mix: MixConfig | None = None
    augment: list[str] | None = Field(None, description="Augmentation styles (needs a model).")
    audit: AuditConfig = Field(
        default_factory=AuditConfig, description="As `qaflow audit` (same names, same defaults)."
    )
    repair: RepairStage | None = Field(default_factory=RepairStage)
    harden: HardenStage | None = Field(default_factory=HardenStage)
    rollout: RolloutStage | None = Field(default_factory=RolloutStage)
    rollout_filter: FilterConfig | None = Field(
        default_factory=FilterConfig, description="As `qaflow filter --config`."
    )
    export: ExportStage = Field(default_factory=ExportStage)

    @classmethod
    def load(cls, path: Path) -> PipelineConfig:
        """Read a YAML, TOML or JSON config; relative paths (output_dir, source paths) are taken from the
        config file's folder.

        Raises:
            ConfigError: unreadable or invalid, naming the file and every problem.
        """
        data = load_yaml_config(path, what="pipeline config")
        base = Path(path).resolve().parent

        def absolute(value: Any) -> Any:
            return str(base / value) if isinstance(value, str) and not Path(value).is_absolute() else value

        data["output_dir"] = absolute(data.get("output_dir", "out"))
        for source in data.get("sources") or []:
            for key in ("path", "out_dir"):
                if key in source:
                    source[key] = absolute(source[key])
        for bench in (data.get("decontam") or {}).get("benchmarks") or []:
            if "path" in bench:
                bench["path"] = absolute(bench["path"])
        try:
            return cls.model_validate(data)
        except ValidationError as e:
            raise ConfigError(path, f"invalid pipeline config: {validation_reason(e)}") from e


class StageInfo(BaseModel):
    stage: str
    done: bool = False
    skipped: str | None = Field(None, description="Why the stage did nothing (no model, nothing to do...).")
    seconds: float = 0.0
    rows_in: int = 0
    rows_out: int = 0
    unit: str = "tasks"
    by_source: dict[str, int] = Field(default_factory=dict)
    info: dict[str, Any] = Field(default_factory=dict)


class PipelineReport(BaseModel):
    name: str
    output_dir: Path
    stages: list[StageInfo] = Field(default_factory=list)
    datasets: dict[str, str] = Field(default_factory=dict)


Progress = Callable[[str], None]


class Pipeline:
    def __init__(
        self,
        config: PipelineConfig,
        *,
        executor: Any = None,
        progress: Progress | None = None,
        on_stage: Callable[[StageInfo], None] | None = None,
    ):
        self.config = config
        self.on_stage = on_stage or (lambda _info: None)
        self.out = Path(config.output_dir).resolve()
        self.pool_dir = self.out / "pool"
        self.executor = executor
        self.say = progress or (lambda _m: None)

    # -- bookkeeping --------------------------------------------------------------------------

    def stage_dir(self, stage: str) -> Path:
        return self.out / "stages" / f"{STAGES.index(stage):02d}-{stage}"

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
        return pl.read_parquet(self.stage_dir(stage) / "kept.parquet")

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
        for stage in STAGES:
            done = self.load_info(stage)
            if done is not None:
                self.say(f"{stage}: done before, reused")
                report.stages.append(done)
                self.on_stage(done)
                tasks = self.kept(stage) if stage not in ("rollout", "rollout_filter", "export") else tasks
                continue
            self.say(f"{stage}: running")
            t0 = time.perf_counter()
            info = StageInfo(stage=stage, rows_in=tasks.height)
            runner = getattr(self, f"_{stage}")
            result, unit_frame = runner(tasks, info)
            info.seconds = round(time.perf_counter() - t0, 2)
            self.save(stage, result, info, unit_frame=unit_frame)
            report.stages.append(info)
            self.on_stage(info)
            if stage not in ("rollout", "rollout_filter", "export"):
                tasks = result.kept
        report.datasets = self._datasets()
        self._write_funnel(report)
        return report

    # -- stages -------------------------------------------------------------------------------

    def _source(self, tasks: pl.DataFrame, info: StageInfo) -> tuple[StageResult, None]:
        from curation.sources import collect_tasks

        result = collect_tasks(self.config.sources)
        info.rows_in = result.kept.height + result.removed.height
        return result, None

    def _dedup(self, tasks: pl.DataFrame, info: StageInfo) -> tuple[StageResult, None]:
        if self.config.dedup is None:
            info.skipped = "not configured"
            return StageResult(tasks, empty_removed()), None
        from curation.dedup import dedup_tasks

        return dedup_tasks(tasks, self.config.dedup), None

    def _decontam(self, tasks: pl.DataFrame, info: StageInfo) -> tuple[StageResult, None]:
        if self.config.decontam is None:
            info.skipped = "no benchmark sets configured"
            return StageResult(tasks, empty_removed()), None
        from curation.decontam import decontaminate, load_benchmark

        items = []
        for spec in self.config.decontam.benchmarks:
            items.extend(load_benchmark(spec))
        return decontaminate(tasks, items, self.config.decontam.config), None

    def _length(self, tasks: pl.DataFrame, info: StageInfo) -> tuple[StageResult, None]:
        if self.config.length is None:
            info.skipped = "not configured"
            return StageResult(tasks, empty_removed()), None
        from curation.task_filters import length_filter

        return length_filter(tasks, **self.config.length.model_dump()), None

    def _mix(self, tasks: pl.DataFrame, info: StageInfo) -> tuple[StageResult, None]:
        if self.config.mix is None:
            info.skipped = "not configured"
            return StageResult(tasks, empty_removed()), None
        from curation.mixing import mix_tasks

        mixed = mix_tasks(tasks, self.config.mix)
        if mixed.eval is not None:
            folder = self.stage_dir("mix")
            folder.mkdir(parents=True, exist_ok=True)
            mixed.eval.write_parquet(folder / "eval.parquet")
        return StageResult(mixed.kept, mixed.removed, mixed.info), None

    def _augment(self, tasks: pl.DataFrame, info: StageInfo) -> tuple[StageResult, None]:
        if not self.config.augment:
            info.skipped = "no augmentation styles configured"
            return StageResult(tasks, empty_removed()), None
        if not self.config.model:
            info.skipped = "needs a model (set `model`): augmentation skipped"
            return StageResult(tasks, empty_removed()), None
        from curation.augment import AugmentConfig, augment_tasks
        from qaflow.llm import LLMConfig

        config = AugmentConfig(
            out_dir=self.out / "augmented",
            llm=LLMConfig(model=self.config.model),
            styles=self.config.augment,
            audit=self.config.audit,
        )
        result = augment_tasks(tasks, config, existing=tasks["instruction"].to_list(), progress=self.say)
        merged = pl.concat([tasks, result.kept], how="diagonal_relaxed")
        return StageResult(merged, result.removed, result.info), None

    def _materialise(self, tasks: pl.DataFrame) -> dict[str, str]:
        """Copy each distinct task folder into OUT/pool/<source>/<folder>; returns path -> pool-relative path."""
        placed: dict[str, str] = {}
        for row in tasks.select("source", "path").unique().iter_rows(named=True):
            if not row["path"]:
                continue
            src = Path(row["path"])
            rel = f"{_slug(row['source'])}/{src.name}"
            dest = self.pool_dir / rel
            if not dest.exists():
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copytree(src, dest, symlinks=True, ignore=shutil.ignore_patterns(".qaflow"))
            placed[row["path"]] = rel
        return placed

    def _audit(self, tasks: pl.DataFrame, info: StageInfo) -> tuple[StageResult, None]:
        from curation.task_filters import attach_status, audit_filter
        from qaflow.audit.service import audit_folders
        from qaflow.pool import Pool

        placed = self._materialise(tasks)
        tasks = tasks.with_columns(pl.col("path").replace_strict(placed, default=None).alias("pool_path"))
        with Pool.open(self.pool_dir) as pool:
            folders = sorted({self.pool_dir / p for p in placed.values()})
            audits = audit_folders(pool, folders, self.config.audit, executor=self.executor, progress=self.say).audits
            info.info["verdicts"] = _counts(a.verdict.value for a in audits)
            tasks = attach_status(tasks, pool.ledger)
        return audit_filter(tasks, allowed=("accepted", "needs_repair")), None

    def _repair(self, tasks: pl.DataFrame, info: StageInfo) -> tuple[StageResult, None]:
        from curation.sources import removed_frame
        from qaflow.pool import Pool

        needing = tasks.filter(pl.col("status") == "needs_repair")
        if self.config.repair is None or needing.is_empty():
            info.skipped = "not configured" if self.config.repair is None else "no task needs repair"
            kept = tasks.filter(pl.col("status") == "accepted")
            return StageResult(
                kept, removed_frame((r, "repair", "needs repair; repair not run") for r in needing["id"])
            ), None
        from qaflow.repair.rounds import repair_pool
        from qaflow.repair.rules import RuleRepairer

        config = self.config.audit
        with Pool.open(self.pool_dir) as pool:
            records = repair_pool(
                pool,
                repairer=RuleRepairer(),
                audit_config=config,
                out_dir=self.pool_dir / ".qaflow" / "repaired",
                max_rounds=self.config.repair.max_rounds,
                progress=self.say,
                **({"executor": self.executor} if self.executor is not None else {}),
            )
        by_version = {r.original_version: r for r in records}
        rows, removed = [], []
        for row in tasks.iter_rows(named=True):
            if row["status"] == "accepted":
                rows.append(row)
                continue
            record = by_version.get(row["version"])
            if record is not None and record.outcome.value == "accepted" and record.final_version:
                path = _rel(record.final_path, self.pool_dir)
                update = {"version": record.final_version, "status": "accepted", "pool_path": path}
                rows.append({**row, **update, "repaired_from": row["version"]})
            else:
                reason = f"unresolved: {record.reason.value if record and record.reason else 'not repaired'}"
                removed.append((row["id"], "repair", reason))
        info.info["outcomes"] = _counts(r.outcome.value for r in records)
        return StageResult(pl.DataFrame(rows, infer_schema_length=None), removed_frame(removed)), None

    def _harden(self, tasks: pl.DataFrame, info: StageInfo) -> tuple[StageResult, None]:
        if self.config.harden is None or not self.config.harden.process_chain or tasks.is_empty():
            info.skipped = "not configured" if self.config.harden is None else "nothing to harden"
            return StageResult(tasks, empty_removed()), None
        from curation.sources import removed_frame
        from qaflow.audit.service import audit_folders
        from qaflow.harden.process_chain import ProcessChainConfig, process_chain
        from qaflow.models.records import RunKind
        from qaflow.pool import Pool
        from qaflow.runs import open_run

        hardened, failures = [], []
        with Pool.open(self.pool_dir) as pool:
            with open_run(pool.ledger, RunKind.HARDEN, {"transform": "process_chain"}) as run:
                for row in tasks.iter_rows(named=True):
                    folder = self.pool_dir / row["pool_path"]
                    target = self.pool_dir / ".qaflow" / "hardened"
                    self.say(f"harden: {row['name']}")
                    try:
                        rec = process_chain(pool, folder, target, run_id=run.run_id,
                                            config=ProcessChainConfig(backend=self.config.audit.backend))  # fmt: skip
                    except Exception as e:  # a task that cannot be chained keeps its original row
                        failures.append((f"{row['id']}@process-chain", "harden", f"{type(e).__name__}: {e}"))
                        continue
                    hardened.append((row, rec))
            folders = [self.pool_dir / rec.pool_path for _, rec in hardened]
            audits = audit_folders(pool, folders, self.config.audit, executor=self.executor, progress=self.say).audits
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

    def _rollout(self, tasks: pl.DataFrame, info: StageInfo) -> tuple[StageResult, pl.DataFrame]:
        from qaflow.models.frame import empty_frame, records_to_frame

        if self.config.rollout is None or not self.config.model:
            info.skipped = "needs a model (set `model`): no rollouts" if self.config.rollout else "not configured"
            info.unit = "rollouts"
            return StageResult(empty_frame(), empty_removed()), empty_frame()
        from qaflow.models.records import VersionStatus
        from qaflow.pool import Pool
        from qaflow.rollouts.job import run_rollouts

        stage = self.config.rollout
        inherited = {k: getattr(self.config.audit, k) for k in ("backend", "offline", "network")}
        job = RolloutJobConfig.model_validate(
            {
                **{k: v for k, v in inherited.items() if k not in stage.model_fields_set},
                **stage.model_dump(exclude={"model"}, exclude_unset=True),
                "model": LLMConfig(model=self.config.model),
                "statuses": stage.statuses or [VersionStatus.ACCEPTED],
            }
        )
        with Pool.open(self.pool_dir) as pool:
            run_rollouts(pool, job, executor=self.executor)
            frame = records_to_frame(pool.ledger.rollouts())
        frame = frame.filter(pl.col("model") == self.config.model)
        info.unit = "rollouts"
        return StageResult(frame, empty_removed()), frame

    def _rollout_filter(self, tasks: pl.DataFrame, info: StageInfo) -> tuple[StageResult, pl.DataFrame]:
        from qaflow.models.frame import empty_frame

        info.unit = "rollouts"
        rollouts = self.kept("rollout") if (self.stage_dir("rollout") / "kept.parquet").is_file() else empty_frame()
        info.rows_in = rollouts.height
        if rollouts.is_empty() or self.config.rollout_filter is None:
            info.skipped = "no rollouts" if rollouts.is_empty() else "not configured"
            return StageResult(rollouts, empty_removed()), rollouts
        from curation.filters import apply_filters

        result = apply_filters(rollouts, self.config.rollout_filter)
        (self.stage_dir("rollout_filter")).mkdir(parents=True, exist_ok=True)
        (self.stage_dir("rollout_filter") / "funnel.json").write_text(
            json.dumps(result.summary(), indent=2, default=str)
        )
        removed = result.removed.select(pl.col("rollout_id").alias("id"), pl.lit("rollout_filter").alias("stage"),
                                        pl.format("{}: {}", "rule", "reason").alias("reason"))  # fmt: skip
        return StageResult(result.kept, removed), result.kept

    def _export(self, tasks: pl.DataFrame, info: StageInfo) -> tuple[StageResult, None]:
        from curation.export import NothingToExport, export_sft
        from curation.export_rl import export_rl
        from curation.export_tasks import export_tasks
        from qaflow.pool import Pool

        datasets = self.out / "datasets"
        written: dict[str, Any] = {}
        final = self._final_pool(tasks)
        with Pool.open(final) as pool:
            if self.config.export.tasks:
                report = export_tasks(pool, datasets / "tasks", status=("accepted", "candidate"), overwrite=True)
                written["tasks"] = report.rows if hasattr(report, "rows") else None
            if self.config.export.rl:
                report = export_rl(pool, datasets / "rl", status=("accepted",), overwrite=True)
                written["rl"] = report.rows if hasattr(report, "rows") else None
        kept_rollouts = (
            self.kept("rollout_filter") if (self.stage_dir("rollout_filter") / "kept.parquet").is_file() else None
        )
        if self.config.export.sft:
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

    def _final_pool(self, tasks: pl.DataFrame) -> Path:
        """OUT/final: one folder per kept task version (accepted originals, accepted repairs, hardened
        candidates), with the status it earned in OUT/pool recorded in its own ledger."""
        from qaflow.models.records import VersionStatus
        from qaflow.pool import Pool

        final = self.out / "final"
        shutil.rmtree(final, ignore_errors=True)
        final.mkdir(parents=True)
        wanted: dict[str, str] = {}
        for row in tasks.unique("version", keep="first").iter_rows(named=True):
            src = self.pool_dir / row["pool_path"]
            dest = final / f"{_slug(row['source'])}" / src.name
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


def _slug(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text) or "source"


def _rel(path: Any, root: Path) -> str:
    p = Path(path)
    return str(p.resolve().relative_to(root.resolve())) if p.is_absolute() else str(p)


def _counts(values: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in values:
        out[v] = out.get(v, 0) + 1
    return dict(sorted(out.items()))


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))
