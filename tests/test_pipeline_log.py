"""`qaflow pipeline run` with stdout to a file: a line per stage start and end and per task, a heartbeat while a
stage is silent, and every skipped stage or dataset with its reason."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import datasets
import pytest

from curation.cli.pipeline_log import PipelineLog
from curation.pipeline import STAGES
from curation.stages.base import StageInfo
from qaflow.cli.progress import HEARTBEAT_ENV
from tests.conftest import REPO, TASKS_REPO, require_backend

QAFLOW = [str(Path(sys.executable).with_name("qaflow"))]


def test_lines_for_starts_tasks_heartbeats_ends_and_skips(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(HEARTBEAT_ENV, "0.2")
    log = io.StringIO()
    with PipelineLog(STAGES, lines=log, bar=None) as progress:
        progress.end(StageInfo(stage="source", done=True, reused=True, rows_out=4))
        progress.start("audit", 4)
        progress.say("csv-sum: accepted, 1.0 s")
        time.sleep(0.7)
        progress.end(StageInfo(stage="audit", done=True, seconds=1.25, rows_in=4, rows_out=3))
        progress.end(StageInfo(stage="augment", done=True, skipped="needs a model (set `model`)"))
        info = {"skipped_datasets": {"sft": "no rollouts passed the filters"}, "candidates_left_out": 2}
        progress.end(StageInfo(stage="export", done=True, seconds=0.5, rows_in=3, rows_out=3, info=info))
    lines = log.getvalue().splitlines()
    assert lines[:3] == [
        "pipeline 1/12 source: done before, reused",
        "pipeline 7/12 audit: started, 4 tasks in",
        "pipeline 7/12 audit: csv-sum: accepted, 1.0 s",
    ]
    beats = lines[3:-5]
    assert 2 <= len(beats) <= 4 and all(re.fullmatch(r"pipeline 7/12 audit: running, 0m0\ds elapsed", b) for b in beats)
    assert lines[-5:] == [
        "pipeline 7/12 audit: done in 1.2 s, 4 tasks in, 3 out",
        "pipeline 6/12 augment: skipped: needs a model (set `model`)",
        "pipeline 12/12 export: done in 0.5 s, 3 tasks in, 3 out",
        "pipeline 12/12 export: SFT dataset skipped: no rollouts passed the filters",
        "pipeline 12/12 export: tasks dataset: accepted versions only; 2 hardened candidates left out "
        "(--include-candidates adds them; on a finished run, with --from export)",
    ]


@pytest.mark.bwrap
def test_pipeline_run_with_stdout_to_a_file_says_what_it_does(tmp_path: Path) -> None:
    require_backend("bwrap")
    shutil.copytree(TASKS_REPO / "csv-sum", tmp_path / "src" / "csv-sum")
    config = {
        "name": "one",
        "output_dir": "out",
        "sources": [{"kind": "harbor", "name": "one", "path": "src", "licence": "MIT"}],
        "audit": {"backend": "bwrap", "repeats": 1, "max_mutants": 2, "jobs": 1},
        "export": {"allow_harness_holes": True},  # the lines here, not a harness hole's exposure
    }
    path = tmp_path / "pipeline.yaml"
    path.write_text(json.dumps(config))
    log = tmp_path / "log"
    with log.open("w") as out:
        done = subprocess.run(
            [*QAFLOW, "pipeline", "run", str(path), "--include-candidates"],
            cwd=REPO,
            stdout=out,
            stderr=subprocess.PIPE,
            env={**os.environ, HEARTBEAT_ENV: "0.5"},
            timeout=300,
        )
    text = log.read_text()
    assert done.returncode == 0, text + done.stderr.decode()
    lines = text.splitlines()
    for index, stage in enumerate(STAGES, 1):
        assert any(line.startswith(f"pipeline {index}/12 {stage}: ") for line in lines), (stage, text)
    assert "pipeline 1/12 source: started, 0 tasks in" in lines
    assert re.search(r"^pipeline 7/12 audit: qaflow/csv-sum: accepted, \d+\.\d s$", text, re.M), text
    assert re.search(r"^pipeline 7/12 audit: done in \d+\.\d s, 1 tasks in, 1 out$", text, re.M), text
    assert re.search(r"^pipeline 7/12 audit: running, 0m\d\ds elapsed$", text, re.M), text  # the heartbeat
    assert "pipeline 6/12 augment: skipped: no augmentation styles configured" in lines
    assert "pipeline 12/12 export: tasks dataset: train 2 rows" in lines  # the task and its hardened candidate
    assert "pipeline 12/12 export: rl dataset: train 1 rows" in lines
    assert "pipeline 12/12 export: SFT dataset skipped: no rollouts passed the filters" in lines
    # the summary after the table says it again, for a reader who skips the progress lines
    assert "export: SFT dataset skipped: no rollouts passed the filters" in lines
    tasks = datasets.load_dataset(str(tmp_path / "out" / "datasets" / "tasks"), cache_dir=str(tmp_path / "cache"))
    assert sorted(tasks["train"]["status"]) == ["accepted", "candidate"]
    assert set(tasks["train"]["licence"]) == {"mit"} and set(tasks["train"]["source"]) == {"one"}
