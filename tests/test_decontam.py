"""Decontamination: planted contaminated tasks (shared 8-gram, light paraphrase, verbatim copy) are caught
against benchmark folders (Harbor, Terminal-Bench) and datasets; controls are kept; thresholds are inclusive."""

from __future__ import annotations

import json
import random
from pathlib import Path

import polars as pl
import pytest
import typer
from typer.testing import CliRunner

from curation.cli.curate import register
from curation.decontam import (
    BenchmarkItem,
    BenchmarkSpec,
    DecontamConfig,
    decontaminate,
    fuzzy_ratio,
    load_benchmark,
    word_ngrams,
)
from curation.dedup import normalise
from curation.sources import SourcedTask, SourceError, tasks_frame, write_tasks
from qaflow.cli.grammar import RootGroup
from tests.conftest import TASKS_REPO
from tests.taskfactory import write_task

B_SERVER = (
    "Create a Python script at /app/server.py that starts an HTTP server on port 8080 and responds to GET "
    '/health with the JSON body {"status": "ok"}. The server must keep running in the background after the '
    "script exits."
)
B_STALE = (
    "Find every file under /data larger than 10 MB that has not been modified in the last 30 days, and write "
    "their absolute paths, sorted alphabetically, one per line, to /app/stale.txt."
)
B_REPO = (
    "Fix the failing unit tests in the repository at /app/repo without modifying any test file; the bug is in "
    "the date parsing helper that ignores time zones."
)

SHARES_ONE_8GRAM = "Write a small Go program. It starts an HTTP server on port 8080 and logs every request to a file."
SHARES_ONE_7GRAM = "Please create a Python script at /app/server.rb which prints hello to the terminal."
CONTROLS = ["csv-sum", "fix-calc", "word-frequency", "json-merge", "log-report", "palindrome-cli", "rename-photos"]
PARAPHRASE = (
    "Find each file under /data bigger than 10 MB that has not been changed in the past 30 days, and write "
    "the absolute paths, sorted alphabetically, one per line, into /app/stale.txt."
)


@pytest.fixture
def bench(tmp_path: Path) -> list[BenchmarkItem]:
    harbor = tmp_path / "bench"
    write_task(harbor, "http-health", instruction=B_SERVER)
    tb = harbor / "stale-files"
    tb.mkdir()
    (tb / "task.yaml").write_text(json.dumps({"instruction": B_STALE, "difficulty": "easy"}))
    data = tmp_path / "bench.jsonl"
    data.write_text(json.dumps({"task_id": "repo-tz", "prompt": B_REPO}) + "\n")
    items = load_benchmark(BenchmarkSpec(name="tb", path=str(harbor)))
    spec = BenchmarkSpec(name="swe", path=str(data), column="prompt", id_column="task_id", cache_dir=tmp_path / "hf")
    items += load_benchmark(spec)
    return items


def pool(extra: dict[str, str]) -> pl.DataFrame:
    controls = {name: (TASKS_REPO / name / "instruction.md").read_text() for name in CONTROLS}
    texts = controls | extra
    return tasks_frame(
        SourcedTask(source="p", original_id=k, name=k, instruction=v, version=k) for k, v in texts.items()
    )


def test_benchmarks_load_from_harbor_and_tb_folders_and_datasets(bench: list[BenchmarkItem]):
    assert [(i.benchmark, i.id) for i in bench] == [("tb", "http-health"), ("tb", "stale-files"), ("swe", "repo-tz")]
    assert [i.text for i in bench] == [B_SERVER, B_STALE, B_REPO]


def test_contaminated_tasks_are_caught_and_controls_kept(bench: list[BenchmarkItem]):
    shared = word_ngrams(normalise(SHARES_ONE_8GRAM).split(), 8) & word_ngrams(normalise(B_SERVER).split(), 8)
    assert len(shared) == 1
    assert not word_ngrams(normalise(PARAPHRASE).split(), 8) & word_ngrams(normalise(B_STALE).split(), 8)
    ratio = fuzzy_ratio(normalise(PARAPHRASE), normalise(B_STALE))
    assert 0.8 <= ratio < 1
    frame = pool(
        {
            "ngram": SHARES_ONE_8GRAM,
            "paraphrase": PARAPHRASE,
            "copy": "Task: " + B_REPO.upper(),
            "control-7gram": SHARES_ONE_7GRAM,
        }
    )
    result = decontaminate(frame, bench)
    own = len(word_ngrams(normalise(SHARES_ONE_8GRAM).split(), 8))
    copy_grams = len(word_ngrams(normalise("Task: " + B_REPO).split(), 8))
    assert dict(zip(result.removed["id"], result.removed["reason"], strict=True)) == {
        "p:ngram": f"contaminated: shares 1 8-grams ({1 / own:.0%} of its own) with tb:http-health",
        "p:paraphrase": f"contaminated: fuzzy ratio {ratio:.3f} with tb:stale-files",
        "p:copy": f"contaminated: shares {copy_grams - 1} 8-grams ({(copy_grams - 1) / copy_grams:.0%} of its own) "
        "with swe:repo-tz",
    }
    assert set(result.removed["stage"]) == {"decontam"}
    assert result.kept.height == frame.height - 3 and "p:control-7gram" in result.kept["id"].to_list()
    assert result.info["removed_by_method"] == {"ngram": 2, "fuzzy": 1}
    assert result.info["removed_by_benchmark"] == {"tb": 2, "swe": 1}
    # the control shares a 7-gram: caught only once n is 7
    seven = decontaminate(pool({"control-7gram": SHARES_ONE_7GRAM}), bench, DecontamConfig(ngram=7))
    assert seven.removed["id"].to_list() == ["p:control-7gram"]


def test_ngram_thresholds_are_inclusive(bench: list[BenchmarkItem]):
    frame = pool({"ngram": SHARES_ONE_8GRAM})
    own = len(word_ngrams(normalise(SHARES_ONE_8GRAM).split(), 8))

    def caught(**options) -> bool:
        config = DecontamConfig(fuzzy_threshold=None, **options)
        return "p:ngram" in decontaminate(frame, bench, config).removed["id"].to_list()

    assert caught(min_shared=1) and not caught(min_shared=2)
    assert caught(min_fraction=1 / own) and not caught(min_fraction=1 / own + 1e-9)


def test_fuzzy_threshold_is_inclusive(bench: list[BenchmarkItem]):
    frame = pool({"paraphrase": PARAPHRASE})
    ratio = fuzzy_ratio(normalise(PARAPHRASE), normalise(B_STALE))
    at = decontaminate(frame, bench, DecontamConfig(ngram=None, fuzzy_threshold=ratio))
    above = decontaminate(frame, bench, DecontamConfig(ngram=None, fuzzy_threshold=ratio + 1e-9))
    assert at.removed["id"].to_list() == ["p:paraphrase"] and above.removed.height == 0
    off = decontaminate(frame, bench, DecontamConfig(ngram=8, fuzzy_threshold=None))
    assert off.removed.height == 0


def test_fuzzy_candidates_in_a_large_benchmark():
    rng = random.Random(4)
    vocab = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 8))) for _ in range(800)]
    texts = [" ".join(rng.choice(vocab) for _ in range(30)) for _ in range(300)]
    items = [BenchmarkItem(benchmark="big", id=str(i), text=t) for i, t in enumerate(texts)]
    words = texts[137].split()
    for i in range(2, len(words), 5):
        words[i] += "x"  # every fifth word changed: no 8-gram survives
    planted = " ".join(words)
    frame = tasks_frame(
        [
            SourcedTask(source="p", original_id="planted", name="planted", instruction=planted, version="1"),
            SourcedTask(source="p", original_id="fresh", name="fresh", instruction=texts[0][::-1], version="2"),
        ]
    )
    result = decontaminate(frame, items, DecontamConfig(exhaustive_below=50, max_candidates=5))
    ratio = fuzzy_ratio(normalise(planted), normalise(texts[137]))
    assert result.removed.rows() == [("p:planted", "decontam", f"contaminated: fuzzy ratio {ratio:.3f} with big:137")]


def test_a_folder_without_tasks_is_an_error(tmp_path: Path):
    with pytest.raises(SourceError, match="no Harbor"):
        load_benchmark(BenchmarkSpec(path=str(tmp_path)))


def test_decontam_cli(tmp_path: Path, bench: list[BenchmarkItem]):
    write_tasks(pool({"paraphrase": PARAPHRASE}), tmp_path / "tasks.parquet")
    app = typer.Typer(cls=RootGroup)  # qaflow's grammar: --json [FILE|-]
    register(app)
    args = ["curate", "decontam", str(tmp_path / "tasks.parquet"), "--bench", str(tmp_path / "bench")]
    result = CliRunner().invoke(
        app, [*args, "--out", str(tmp_path / "clean.parquet"), "--removed", str(tmp_path / "r.csv")]
    )
    assert result.exit_code == 0, result.output
    assert "decontam: kept 7, removed 1" in result.output
    assert pl.read_csv(tmp_path / "r.csv")["id"].to_list() == ["p:paraphrase"]
    assert "p:paraphrase" not in pl.read_parquet(tmp_path / "clean.parquet")["id"].to_list()
    off = CliRunner().invoke(app, [*args, "--fuzzy", "0", "--json"])
    assert json.loads(off.output)["removed"] == 0
