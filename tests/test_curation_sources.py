"""Task sources: Harbor and Terminal-Bench folders, Hugging Face dataset rows (materialised as Harbor tasks
that load and run), Python generators, a sources config file, the task frame with provenance, and the task
filters over that frame (length, language, difficulty bands, audit verdict)."""

from __future__ import annotations

import json
import shutil
import tomllib
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest
import typer
from typer.testing import CliRunner

from curation.cli.curate import register
from curation.sources import (
    TASK_SCHEMA,
    ColumnMap,
    DatasetSource,
    HarborSource,
    PythonSource,
    SourcedTask,
    SourceError,
    SourcesConfig,
    TerminalBenchSource,
    collect_tasks,
    read_tasks,
    tasks_frame,
    write_task_folder,
)
from curation.task_filters import (
    attach_pass_rates,
    attach_status,
    audit_filter,
    detect_language,
    difficulty_filter,
    language_filter,
    length_filter,
)
from qaflow.agents import OracleAgent
from qaflow.cli.grammar import RootGroup
from qaflow.ledger.status import StatusWriter
from qaflow.models.frame import records_to_frame
from qaflow.models.records import VersionStatus
from qaflow.models.rollout import RolloutRecord
from qaflow.pool import Pool
from qaflow.task import Task
from qaflow.trial import run_trial
from tests.conftest import TASKS_REPO, require_backend
from tests.taskfactory import write_task

DOCKERFILE = "FROM python:3.11-slim\nWORKDIR /app\n"
TEST_SH = (
    "#!/bin/bash\nmkdir -p /logs/verifier\n"
    'if [ "$(cat /app/out.txt 2>/dev/null)" = "{word}" ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n'
)


def dataset_rows() -> list[dict]:
    rows = []
    for i, word in enumerate(["alpha", "beta", "gamma"]):
        rows.append(
            {
                "uid": f"row/{i}",
                "prompt": f"Write the word `{word}` to /app/out.txt.",
                "docker": DOCKERFILE,
                "verifier": TEST_SH.format(word=word),
                "oracle": f"#!/bin/bash\necho {word} > /app/out.txt\n",
                "license": "MIT" if i == 0 else None,
            }
        )
    rows.append({"uid": "broken", "prompt": "No tests here.", "docker": DOCKERFILE, "verifier": None, "oracle": "x"})
    return rows


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


COLUMNS = ColumnMap(id="uid", instruction="prompt", dockerfile="docker", tests="verifier", solution="oracle",
                    licence="license")  # fmt: skip


def test_harbor_source_gives_provenance_and_reports_invalid_tasks(tmp_path: Path):
    root = tmp_path / "pool"
    shutil.copytree(TASKS_REPO / "csv-sum", root / "data" / "csv-sum")
    shutil.copytree(TASKS_REPO / "menu-prices", root / "menu-prices")  # an invalid task
    write_task(root, "licensed", toml_extra='\n[metadata]\nlicence = "CC-BY-4.0"\n')
    result = collect_tasks([HarborSource(name="local", path=root, licence="Apache-2.0")])
    frame = result.kept
    assert frame.schema == pl.Schema(TASK_SCHEMA)
    rows = {r["id"]: r for r in frame.iter_rows(named=True)}
    assert set(rows) == {"local:data/csv-sum", "local:licensed"}
    csv_sum = rows["local:data/csv-sum"]
    assert (csv_sum["source"], csv_sum["original_id"], csv_sum["licence"], csv_sum["name"]) == (
        "local", "data/csv-sum", "apache-2.0", "qaflow/csv-sum"
    )  # fmt: skip
    assert csv_sum["version"] == Task.load(root / "data" / "csv-sum").version
    assert csv_sum["instruction"] == (TASKS_REPO / "csv-sum" / "instruction.md").read_text()
    assert rows["local:licensed"]["licence"] == "cc-by-4.0"  # licences as the Hub spells them
    assert result.removed.rows() == [
        ("local:menu-prices", "source", result.removed["reason"][0]),
    ]
    assert result.removed["reason"][0].startswith("invalid task: ")
    assert result.info["sources"] == {"local": {"tasks": 2, "problems": 1}}


def test_terminal_bench_source_converts_first(tmp_path: Path):
    tb = tmp_path / "tb" / "count-words"
    tb.mkdir(parents=True)
    (tb / "task.yaml").write_text("instruction: Count the words of /app/w.txt into /app/n.txt.\n")
    (tb / "Dockerfile").write_text("FROM python:3.11-slim\nWORKDIR /app\n")
    (tb / "solution.sh").write_text("#!/bin/bash\nwc -w < /app/w.txt > /app/n.txt\n")
    (tb / "run-tests.sh").write_text("#!/bin/bash\ntest -s /app/n.txt\n")
    result = collect_tasks([TerminalBenchSource(name="tb", path=tmp_path / "tb", out_dir=tmp_path / "converted")])
    assert result.removed.height == 0
    row = result.kept.row(0, named=True)
    assert (row["id"], row["original_id"], row["name"]) == (
        "tb:count-words",
        "count-words",
        "terminal-bench/count-words",
    )
    assert Path(row["path"]) == (tmp_path / "converted" / "count-words").resolve()
    assert row["instruction"].strip() == "Count the words of /app/w.txt into /app/n.txt."


def test_dataset_rows_are_materialised_as_harbor_tasks(tmp_path: Path):
    data = write_jsonl(tmp_path / "rows.jsonl", dataset_rows())
    spec = DatasetSource(name="hf", dataset=str(data), columns=COLUMNS, out_dir=tmp_path / "out",
                         licence="unknown", cache_dir=tmp_path / "cache")  # fmt: skip
    result = collect_tasks([spec])
    assert result.kept["id"].to_list() == ["hf:row/0", "hf:row/1", "hf:row/2"]
    assert result.kept["licence"].to_list() == ["mit", "unknown", "unknown"]
    assert result.removed.rows() == [("hf:broken", "source", "column 'verifier' is missing")]
    first = result.kept.row(0, named=True)
    folder = Path(first["path"])
    assert folder.parent == (tmp_path / "out" / "hf").resolve() and folder.name.startswith("row-0-")
    task = Task.load(folder)
    assert task.version == first["version"] and task.instruction == "Write the word `alpha` to /app/out.txt."
    assert task.config.metadata == {"source": "hf", "original_id": "row/0", "licence": "MIT"}
    assert task.name == "hf/row/0"
    assert (folder / "tests" / "test.sh").stat().st_mode & 0o111
    # materialising again gives the same versions (the folder is rewritten by its owner only)
    again = collect_tasks([spec])
    assert again.kept["version"].to_list() == result.kept["version"].to_list()
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "task.toml").write_text('[metadata]\nsource = "someone"\n')
    with pytest.raises(SourceError, match="was not materialised by source 'hf'"):
        write_task_folder(foreign, {}, "x", {"Dockerfile": "FROM x"}, {"test.sh": "x"}, {"solve.sh": "x"}, owner="hf")
    assert (foreign / "task.toml").read_text() == '[metadata]\nsource = "someone"\n'


def test_dataset_columns_may_hold_folders_and_rows_may_stay_unmaterialised(tmp_path: Path):
    rows = [
        {
            "id": "multi",
            "instruction": "Make /app/out.txt say hi.",
            "dockerfile": {"Dockerfile": "FROM python:3.11-slim\nWORKDIR /app\nCOPY seed.txt /app/seed.txt\n",
                           "seed.txt": "seed\n"},
            "tests": {"test.sh": TEST_SH.format(word="hi"), "helper.py": "print('helper')\n"},
            "solution": "#!/bin/bash\necho hi > /app/out.txt\n",
        }
    ]  # fmt: skip
    data = tmp_path / "rows.parquet"
    pl.DataFrame(rows).write_parquet(data)
    spec = DatasetSource(name="pq", dataset=str(data), out_dir=tmp_path / "out", cache_dir=tmp_path / "cache")
    row = collect_tasks([spec]).kept.row(0, named=True)
    folder = Path(row["path"])
    assert (folder / "environment" / "seed.txt").read_text() == "seed\n"
    assert (folder / "tests" / "helper.py").is_file() and Task.load(folder).version == row["version"]
    bare = collect_tasks([spec.model_copy(update={"out_dir": None})]).kept.row(0, named=True)
    assert bare["path"] is None and len(bare["version"]) == 64 and bare["name"] == "pq/multi"


def test_materialised_dataset_task_runs(tmp_path: Path):
    require_backend("bwrap")
    data = write_jsonl(tmp_path / "rows.jsonl", dataset_rows()[:1])
    spec = DatasetSource(name="hf", dataset=str(data), columns=COLUMNS, out_dir=tmp_path / "out",
                         cache_dir=tmp_path / "cache")  # fmt: skip
    row = collect_tasks([spec]).kept.row(0, named=True)
    result = run_trial(Task.load(row["path"]), OracleAgent(), backend="bwrap", run_id="pytest")
    assert result.reward == 1.0


def generate(count: int, prefix: str = "gen") -> Iterator[SourcedTask | dict]:
    for i in range(count):
        if i == 1:
            yield {"original_id": f"{prefix}-{i}", "name": "no instruction"}
            continue
        yield SourcedTask(source="ignored", original_id=f"{prefix}-{i}", name=f"{prefix}/{i}",
                          instruction=f"Generated task {i}.", version=f"v{i}")  # fmt: skip


def test_python_entry_point_source():
    spec = PythonSource(name="synth", entry_point="tests.test_curation_sources:generate", options={"count": 3},
                        licence="CC0")  # fmt: skip
    result = collect_tasks([spec])
    assert result.kept.select("id", "source", "licence").rows() == [("synth:gen-0", "synth", "cc0"),
                                                                   ("synth:gen-2", "synth", "cc0")]  # fmt: skip
    assert result.removed.rows() == [("synth:gen-1", "source", "generator item invalid: instruction: Field required")]
    with pytest.raises(SourceError, match="cannot load the entry point"):
        collect_tasks([PythonSource(name="x", entry_point="tests.test_curation_sources:nothing")])
    with pytest.raises(SourceError, match="must look like"):
        collect_tasks([PythonSource(name="x", entry_point="no_colon")])


def test_sources_config_and_duplicate_ids_and_cli(tmp_path: Path):
    shutil.copytree(TASKS_REPO / "csv-sum", tmp_path / "a" / "csv-sum")
    shutil.copytree(TASKS_REPO / "fix-calc", tmp_path / "a" / "fix-calc")
    config = tmp_path / "sources.yaml"
    config.write_text(
        "sources:\n"
        "  - {kind: harbor, name: local, path: a}\n"
        "  - {kind: harbor, name: local, path: a/csv-sum}\n"
        "  - {kind: python, name: synth, entry_point: 'tests.test_curation_sources:generate', options: {count: 1}}\n"
    )
    specs = SourcesConfig.load(config).sources
    assert specs[0].path == tmp_path / "a"
    result = collect_tasks(specs)
    assert result.kept["id"].to_list() == ["local:csv-sum", "local:fix-calc", "synth:gen-0"]
    assert result.removed.rows() == [("local:csv-sum", "source", "duplicate id: an earlier task of the sources has it")]
    (tmp_path / "bad.yaml").write_text("sources:\n  - {kind: nope, name: x}\n")
    with pytest.raises(SourceError, match="invalid sources"):
        SourcesConfig.load(tmp_path / "bad.yaml")

    app = typer.Typer(cls=RootGroup)  # qaflow's grammar: --json [FILE|-]
    register(app)
    out = tmp_path / "tasks.parquet"
    cli = CliRunner().invoke(app, ["curate", "sources", str(config), "--out", str(out), "--removed",
                                   str(tmp_path / "removed.csv")])  # fmt: skip
    assert cli.exit_code == 0, cli.output
    assert "sources: kept 3, removed 1" in cli.output
    assert read_tasks(out)["id"].to_list() == ["local:csv-sum", "local:fix-calc", "synth:gen-0"]
    assert pl.read_csv(tmp_path / "removed.csv")["id"].to_list() == ["local:csv-sum"]
    # dedup over the written frame and a folder input
    dedup = CliRunner().invoke(app, ["curate", "dedup", str(out), "--json"])
    assert dedup.exit_code == 0 and json.loads(dedup.output)["kept"] == 3
    clash = CliRunner().invoke(app, ["curate", "dedup", str(out), str(out)])
    assert clash.exit_code == 2 and "share task ids" in clash.output
    assert tomllib.loads((tmp_path / "a" / "csv-sum" / "task.toml").read_text())["task"]["name"] == "qaflow/csv-sum"


# -- task filters over the task frame ------------------------------------------------------------------


def frame_of(texts: dict[str, str], **columns: list) -> pl.DataFrame:
    tasks = [SourcedTask(source="s", original_id=k, name=k, instruction=v, version=f"v-{k}") for k, v in texts.items()]
    return tasks_frame(tasks).with_columns(**{k: pl.Series(k, v) for k, v in columns.items()})


def test_length_filter_bounds_are_inclusive():
    tasks = frame_of({"ten": "a" * 10, "eleven": "b" * 11, "words": "one two  three\nfour"})
    result = length_filter(tasks, min_chars=10, max_chars=19, max_words=1)
    assert result.kept["id"].to_list() == ["s:ten", "s:eleven"]
    assert result.removed.rows() == [("s:words", "length", "more than 1 words (4)")]
    short = length_filter(tasks, min_chars=11)
    assert short.removed.rows() == [("s:ten", "length", "fewer than 11 characters (10)")]
    assert length_filter(tasks, min_words=4, max_words=4).kept["id"].to_list() == ["s:words"]
    assert length_filter(tasks, max_chars=18).removed.rows() == [("s:words", "length", "more than 18 characters (19)")]


def test_language_heuristic_and_filter():
    texts = {
        "en": (TASKS_REPO / "csv-sum" / "instruction.md").read_text(),
        "de": "Schreibe die Summe der Beträge in die Datei /app/summe.txt und sortiere die Zeilen nicht.",
        "fr": "Écrivez la somme des montants dans le fichier /app/somme.txt et ne triez pas les lignes.",
        "es": "Escribe la suma de los importes en el archivo /app/suma.txt y no ordenes las líneas.",
        "zh": "把 /app/data.csv 中北区的销售额相加，结果写入 /app/answer.txt，保留两位小数。",
        "ja": "/app/data.csv の北地域の売上を合計し、結果を /app/answer.txt に書いてください。",
        "ru": "Сложите продажи северного региона из /app/data.csv и запишите сумму в /app/answer.txt.",
        "und": "ls -la /app && cat /app/x.csv | wc -l",
    }
    assert {k: detect_language(v) for k, v in texts.items()} == {k: k for k in texts}
    result = language_filter(frame_of(texts))
    assert result.kept["id"].to_list() == ["s:en", "s:und"]
    assert result.removed.filter(pl.col("id") == "s:de").rows() == [
        ("s:de", "language", "language de not in ['en', 'und']")
    ]
    assert result.info["detected"] == {k: 1 for k in sorted(texts)}
    strict = language_filter(frame_of(texts), ["en", "de"], keep_undetermined=False)
    assert strict.kept["id"].to_list() == ["s:en", "s:de"]


def test_difficulty_bands_from_recorded_rollouts():
    rates = {"zero": (0, 4), "quarter": (1, 4), "half": (2, 4), "three": (3, 4), "most": (9, 10), "all": (4, 4)}
    records = [
        RolloutRecord(task=name, task_version=f"v-{name}", model="m", attempt=a, full_reward=a < passes,
                      exit_status="ok", reward=1.0 if a < passes else 0.0)
        for name, (passes, attempts) in rates.items()
        for a in range(attempts)
    ]  # fmt: skip
    records.append(RolloutRecord(task="half", task_version="v-half", model="m", attempt=9, full_reward=True,
                                 exit_status="agent_timeout"))  # fmt: skip
    tasks = attach_pass_rates(frame_of({name: name for name in [*rates, "unrated"]}), records_to_frame(records))
    assert dict(zip(tasks["original_id"], tasks["pass_rate"], strict=True)) == {
        "zero": 0.0, "quarter": 0.25, "half": 0.4, "three": 0.75, "most": 0.9, "all": 1.0, "unrated": None,
    }  # fmt: skip
    result = difficulty_filter(tasks, ["hard", "medium"])
    assert result.kept["original_id"].to_list() == ["half", "three"]
    reasons = dict(result.removed.select("id", "reason").iter_rows())
    assert reasons["s:quarter"] == "band very_hard (pass rate 0.25) not in hard, medium"
    assert reasons["s:all"] == "band trivial (pass rate 1.0) not in hard, medium"
    assert reasons["s:unrated"] == "no recorded pass rate"
    assert difficulty_filter(tasks, ["easy"], keep_unrated=True).kept["original_id"].to_list() == ["most", "unrated"]
    with pytest.raises(ValueError, match="unknown difficulty bands"):
        difficulty_filter(tasks, ["tough"])


def test_audit_filter_keeps_only_accepted_versions(tmp_path: Path):
    for name in ("csv-sum", "fix-calc", "json-merge"):
        shutil.copytree(TASKS_REPO / name, tmp_path / "pool" / name)
    tasks = collect_tasks([HarborSource(name="p", path=tmp_path / "pool")]).kept
    with Pool.open(tmp_path / "pool") as pool:
        pool.scan()
        version = tasks.filter(pl.col("original_id") == "csv-sum")["version"][0]
        pool.ledger.set_status(version, VersionStatus.ACCEPTED, by=StatusWriter.AUDIT, reason="test")
        pool.ledger.set_status(
            tasks.filter(pl.col("original_id") == "fix-calc")["version"][0],
            VersionStatus.NEEDS_REPAIR,
            by=StatusWriter.AUDIT,
            reason="test",
        )
        with_status = attach_status(tasks, pool.ledger)
    (tmp_path / "pool" / "json-merge" / "instruction.md").write_text("changed\n")
    changed = collect_tasks([HarborSource(name="p", path=tmp_path / "pool")]).kept
    with Pool.open(tmp_path / "pool") as pool:
        changed = attach_status(changed, pool.ledger)
    result = audit_filter(with_status)
    assert result.kept["original_id"].to_list() == ["csv-sum"]
    assert dict(result.removed.select("id", "reason").iter_rows()) == {
        "p:fix-calc": "audit status needs_repair",
        "p:json-merge": "audit status new",
    }
    assert audit_filter(changed).removed.filter(pl.col("id") == "p:json-merge")["reason"].to_list() == [
        "not audited (version not in the ledger)"
    ]


def test_licences_are_written_as_the_hub_spells_them() -> None:
    from curation.licences import hub_licence

    assert [hub_licence(s) for s in ("Apache-2.0", " MIT ", "CC-BY-4.0", "GPL-3.0-only", "LGPL-2.1-or-later")] == [
        "apache-2.0",
        "mit",
        "cc-by-4.0",
        "gpl-3.0",
        "lgpl-2.1",
    ]
    assert hub_licence("") is None and hub_licence(None) is None
