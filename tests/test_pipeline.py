"""The curation pipeline as one resumable batch job, on a small pool under bwrap."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import datasets
import polars as pl
import pytest
from typer.testing import CliRunner

from curation.pipeline import STAGES, Pipeline, PipelineConfig
from qaflow.cli import app
from tests.conftest import TASKS_REPO, require_backend

TASKS = ("csv-sum", "fix-calc", "reconcile-bank-statement", "assemble-handbook")


def small_config(tmp_path: Path, **extra: object) -> Path:
    src = tmp_path / "src"
    for name in TASKS:
        shutil.copytree(TASKS_REPO / name, src / name)
    shutil.copytree(TASKS_REPO / "csv-sum", src / "csv-sum-copy")  # an exact duplicate instruction
    config = {
        "name": "small",
        "output_dir": "out",
        "sources": [{"kind": "harbor", "name": "small", "path": "src", "licence": "Apache-2.0"}],
        "length": {"min_words": 5},
        "augment": ["paraphrase"],
        "audit": {"backend": "bwrap", "repeats": 2, "max_mutants": 4, "jobs": 2},
        # the counts here are about the stages; a proven harness hole's exposure is tests/test_audit_report.py's
        "export": {"allow_harness_holes": True},
        **extra,
    }
    path = tmp_path / "pipeline.yaml"
    path.write_text(json.dumps(config))  # JSON is YAML
    return path


@pytest.mark.bwrap
def test_pipeline_runs_end_to_end_resumes_and_counts_add_up(tmp_path: Path) -> None:
    require_backend("bwrap")
    config = PipelineConfig.load(small_config(tmp_path))
    report = Pipeline(config).run()
    stages = {s.stage: s for s in report.stages}
    assert [s.stage for s in report.stages] == list(STAGES)
    assert stages["source"].rows_out == 5
    assert stages["dedup"].rows_out == 4  # the duplicate is gone
    assert stages["augment"].skipped and "model" in stages["augment"].skipped
    assert stages["rollout"].skipped and "model" in stages["rollout"].skipped
    assert stages["audit"].info["verdicts"] == {"accepted": 2, "needs_repair": 2}
    assert stages["repair"].rows_out == 3  # reconcile-bank-statement is rule-repaired; assemble-handbook is not
    assert stages["harden"].rows_out == 6 and stages["harden"].info["hardened"] == 3
    out = config.output_dir
    for stage in ("dedup", "length", "audit", "repair"):
        folder = next((out / "stages").glob(f"*-{stage}"))
        removed = pl.read_parquet(folder / "removed.parquet")
        assert stages[stage].rows_in - removed.height == stages[stage].rows_out, stage
        assert removed["reason"].str.len_chars().min() or removed.is_empty()
    unresolved = pl.read_parquet(next((out / "stages").glob("*-repair")) / "removed.parquet")
    assert unresolved["id"].to_list() == ["small:assemble-handbook"]
    tasks = datasets.load_dataset(str(out / "datasets" / "tasks"), split="train", cache_dir=str(out / "hf-cache"))
    assert sorted(tasks["status"]) == ["accepted"] * 3  # the 3 hardened candidates were never accepted
    assert stages["export"].info["candidates_left_out"] == 3
    rl = datasets.load_dataset(str(out / "datasets" / "rl"), split="train", cache_dir=str(out / "hf-cache"))
    assert len(rl) == 3
    for dataset in (tasks, rl):  # one source everywhere: the rows, the card and the funnel say `small`
        assert set(dataset["source"]) == {"small"} and set(dataset["licence"]) == {"apache-2.0"}
    card = (out / "datasets" / "tasks" / "README.md").read_text()
    assert "license: apache-2.0" in card and "| `small` | 3 |" in card and "`local`" not in card
    assert set(stages["export"].by_source) == {"small"}
    assert report.skipped_datasets == {"sft": "no rollouts passed the filters"}
    assert (out / "funnel.png").stat().st_size > 5000 and json.loads((out / "funnel.json").read_text())

    stamps = {p: p.stat().st_mtime_ns for p in (out / "stages").glob("*/info.json")}
    again = Pipeline(config).run()
    assert [s.rows_out for s in again.stages] == [s.rows_out for s in report.stages]
    assert {p: p.stat().st_mtime_ns for p in (out / "stages").glob("*/info.json")} == stamps  # nothing redone

    config.export.include_candidates = True  # what `pipeline run --include-candidates` sets
    Pipeline(config).run(start_from="harden")
    after = {p.parent.name: p.stat().st_mtime_ns for p in (out / "stages").glob("*/info.json")}
    before = {p.parent.name: t for p, t in stamps.items()}
    assert after["06-audit"] == before["06-audit"] and after["08-harden"] != before["08-harden"]
    tasks = datasets.load_dataset(str(out / "datasets" / "tasks"), split="train", cache_dir=str(out / "hf-cache"))
    assert sorted(tasks["status"]) == ["accepted"] * 3 + ["candidate"] * 3 and set(tasks["source"]) == {"small"}


@pytest.mark.bwrap
def test_a_failed_stage_is_rerun_without_redoing_finished_ones(tmp_path: Path) -> None:
    require_backend("bwrap")
    path = small_config(tmp_path, decontam={"benchmarks": [{"path": "missing-bench", "name": "bench"}]})
    config = PipelineConfig.load(path)
    with pytest.raises(Exception, match="missing-bench"):
        Pipeline(config).run()
    done = sorted(p.parent.name for p in (config.output_dir / "stages").glob("*/info.json"))
    assert done == ["00-source", "01-dedup"]
    stamp = (config.output_dir / "stages" / "00-source" / "info.json").stat().st_mtime_ns
    shutil.copytree(TASKS_REPO / "csv-sum", tmp_path / "missing-bench" / "csv-sum")  # the cause, fixed
    report = Pipeline(config).run()
    assert (config.output_dir / "stages" / "00-source" / "info.json").stat().st_mtime_ns == stamp  # reused
    decontam = next(s for s in report.stages if s.stage == "decontam")
    assert decontam.rows_in == 4 and decontam.rows_out == 3  # csv-sum is in the benchmark set now
    assert next(s for s in report.stages if s.stage == "export").done


def test_pipeline_cli_rejects_a_bad_config(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nsources: []\nbogus: 1\n")
    result = CliRunner().invoke(app, ["pipeline", "run", str(bad)])
    assert result.exit_code == 2 and "bogus" in result.output


def test_stage_sections_are_the_commands_own_configs(tmp_path: Path) -> None:
    """The batch job and the CLI mean the same thing by the same words: each section is the command's model."""
    from curation.decontam import DecontamConfig
    from curation.filters import FilterConfig
    from qaflow.audit.runner import AuditConfig
    from qaflow.errors import ConfigError
    from qaflow.rollouts.job import RolloutJobConfig

    path = tmp_path / "p.yaml"
    path.write_text(
        "name: p\nsources: []\n"
        "audit: {backend: bwrap}\n"
        "decontam: {benchmarks: [{path: bench}], config: {ngram: 5}}\n"
        "rollout: {efforts: [low], max_concurrency: 3}\n"
    )
    with pytest.raises(ConfigError, match=r"p\.yaml: invalid pipeline config: rollout\.max_concurrency: Extra inputs"):
        PipelineConfig.load(path)
    path.write_text(path.read_text().replace("max_concurrency: 3", "round: 2"))
    config = PipelineConfig.load(path)
    assert isinstance(config.audit, AuditConfig) and config.audit.repeats == AuditConfig().repeats
    assert isinstance(config.decontam.config, DecontamConfig) and config.decontam.config.ngram == 5  # type: ignore[union-attr]
    assert config.decontam.benchmarks[0].path == str(tmp_path / "bench")  # type: ignore[union-attr]
    assert isinstance(config.rollout, RolloutJobConfig) and config.rollout.round == 2
    assert config.rollout.attempts == RolloutJobConfig.model_fields["attempts"].default
    assert config.rollout_filter == FilterConfig()
    assert "backend" not in config.rollout.model_fields_set  # so the rollout stage follows audit's bwrap
