"""Misuse ends in one `error:` line naming the path and the reason, exit status 2, never a traceback."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from qaflow.cli import app


def _run(*args: str):
    return CliRunner().invoke(app, list(args), terminal_width=200)


def test_version() -> None:
    from importlib.metadata import version

    out = _run("--version")
    assert out.exit_code == 0 and out.output.strip() == f"qaflow {version('qaflow')}"


def test_an_empty_pool_is_a_pool_and_a_file_is_not(tmp_path: Path) -> None:
    empty = tmp_path / "pool"
    (empty / "not-a-task").mkdir(parents=True)
    for command in ("audit", "check", "pool scan"):
        out = _run(*command.split(), str(empty))
        assert out.exit_code == 0, (command, out.output)  # as `pool scan` has it: nothing to do is no misuse
        assert "Traceback" not in out.output
        if command != "pool scan":
            assert out.output == f"{empty}: no task folders (task.toml) found, nothing to {command}\n"
    file = tmp_path / "task.toml"
    file.write_text("")
    for command in ("audit", "check"):
        out = _run(command, str(file))
        assert out.exit_code == 2 and out.output.startswith(f"error: {file}"), (command, out.output)
        assert "not a folder" in out.output
    out = _run("filter", str(empty))
    assert out.exit_code == 2 and "no rollouts to filter" in out.output


def test_a_parquet_that_is_not_rollouts_is_named_with_the_reason(tmp_path: Path) -> None:
    other = tmp_path / "scores.parquet"
    pl.DataFrame({"recipe": ["a"], "score": [1.0]}).write_parquet(other)
    junk = tmp_path / "junk.parquet"
    junk.write_text("not parquet at all\n")
    for path, reason in ((other, "not rollouts: missing columns rollout_id"), (junk, "cannot read rollouts")):
        for command in (["filter"], ["rollout", "stats"], ["export", "sft"]):
            args = [*command, str(path)] + (["--out", str(tmp_path / "out")] if command[0] == "export" else [])
            out = _run(*args)
            assert out.exit_code == 2, (command, out.output)
            assert f"{path}: {reason}" in out.output, (command, out.output)
            assert out.exception is None or isinstance(out.exception, SystemExit)


def test_sft_check_names_a_dataset_without_messages(tmp_path: Path) -> None:
    data = tmp_path / "scores.parquet"
    pl.DataFrame({"text": ["hello"]}).write_parquet(data)
    out = _run("sft", "check", str(data), "--model", str(tmp_path / "no-model"))
    assert out.exit_code == 2, out.output
    assert f"{data}: not an SFT dataset: no `messages` column (columns: text)" in out.output


def test_a_missing_local_benchmark_is_not_tried_as_a_hub_id(tmp_path: Path, monkeypatch) -> None:
    from curation.decontam import BenchmarkSpec, load_benchmark
    from curation.sources import SourceError

    monkeypatch.chdir(tmp_path)
    for path in ("./missing", str(tmp_path / "gone"), "bench.parquet"):
        with pytest.raises(SourceError) as info:
            load_benchmark(BenchmarkSpec(path=path))
        assert info.value.reason == "no such benchmark folder or file", path


def test_a_missing_local_model_is_not_tried_as_a_hub_id(tmp_path: Path, monkeypatch) -> None:
    from qaflow.model_source import ModelPathError, model_source

    monkeypatch.chdir(tmp_path)
    (tmp_path / "models").mkdir()
    for name in ("./tiny", str(tmp_path / "gone"), "models/tiny", "a/b/c", "~/no-such-model-here"):
        with pytest.raises(ModelPathError, match="no such model folder"):
            model_source(name)
    assert model_source("Qwen/Qwen3-0.6B") == "Qwen/Qwen3-0.6B"  # a hub id stays one
    (tmp_path / "models" / "tiny").mkdir()
    assert model_source("models/tiny") == str(tmp_path / "models" / "tiny")
    data = tmp_path / "sessions.parquet"
    pl.DataFrame({"messages": [[{"role": "user", "content": "hi"}]]}).write_parquet(data)
    out = _run("sft", "check", str(data), "--model", "./missing-model")
    assert out.exit_code == 2 and "missing-model: no such model folder" in out.output, out.output
