"""Augmentation with a scripted model: rewrites keep environment, tests and solution, every rewritten task is
audited (bwrap) and kept only when accepted, near duplicates and unchanged rewrites are dropped, the files
style moves text into the environment, model failures are reasons, and reruns reuse what was written."""

from __future__ import annotations

import json
import shutil
import tomllib
from pathlib import Path

import polars as pl
import pytest
import typer
from typer.testing import CliRunner

from curation.augment import AugmentConfig, Style, augment_tasks, messages_for
from curation.cli.curate import register
from curation.dedup import jaccard, normalise, shingles
from curation.sources import HarborSource, collect_tasks, write_tasks
from qaflow.audit.runner import AuditConfig
from qaflow.cli.grammar import RootGroup
from qaflow.llm import LLM, LLMConfig, ScriptedReply
from qaflow.task import Task
from tests.conftest import TASKS_REPO, require_backend

pytestmark = pytest.mark.bwrap  # its tests run real bwrap sandboxes (audits, repairs, trials)

CSV_PARAPHRASE = (
    "Sum the `amount` column over every row of `/app/sales.csv` (columns `date,region,amount`) whose region is "
    "`north`. Save the result in `/app/answer.txt` as one number formatted with exactly two decimal places, "
    "e.g. `1234.50`."
)
CSV_LEAKY = (
    "Sum `amount` for the `north` region of /app/sales.csv and write it with two decimals to /app/answer.txt. "
    "The format is checked by /tests/check.py, have a look at it."
)
QUIZ_PARAPHRASE = (
    "Grade a quiz of 8 questions. The key is `/app/answer_key.txt` (lines like `1:B`); the answers are in "
    "`/app/submissions.csv` (columns `student,q1,...,q8`, an empty cell means unanswered). Produce "
    "`/app/scores.csv` with header `student,correct,percent`, students in input order, where percent is "
    "`correct / 8 * 100` with one decimal (e.g. `62.5`)."
)


def reply(instruction: str, files: list[dict] | None = None) -> ScriptedReply:
    return ScriptedReply(content=json.dumps({"instruction": instruction} | ({"files": files} if files else {})))


def pool(tmp_path: Path, names: list[str]) -> pl.DataFrame:
    for name in names:
        shutil.copytree(TASKS_REPO / name, tmp_path / "pool" / name)
    return collect_tasks([HarborSource(name="local", path=tmp_path / "pool")]).kept


def config(tmp_path: Path, styles: list[Style]) -> AugmentConfig:
    return AugmentConfig(
        out_dir=tmp_path / "augmented",
        llm=LLMConfig(model="openai/scripted"),
        styles=styles,
        audit=AuditConfig(backend="bwrap", repeats=2, max_mutants=4, jobs=2),
    )


def same_files(a: Path, b: Path, folder: str) -> bool:
    files = sorted(p.relative_to(a / folder) for p in (a / folder).rglob("*") if p.is_file())
    return files == sorted(p.relative_to(b / folder) for p in (b / folder).rglob("*") if p.is_file()) and all(
        (a / folder / f).read_bytes() == (b / folder / f).read_bytes() for f in files
    )


def test_rewrites_are_audited_and_only_clean_new_ones_kept(tmp_path: Path):
    require_backend("bwrap")
    tasks = pool(tmp_path, ["csv-sum", "score-quiz"])
    quiz = tasks.filter(pl.col("original_id") == "score-quiz")["instruction"][0]
    quiz_near = quiz.replace("Write `/app/scores.csv`", "Create `/app/scores.csv`")
    near_j = jaccard(shingles(normalise(quiz_near)), shingles(normalise(quiz)))
    assert 0.8 <= near_j < 1
    script = [reply(CSV_PARAPHRASE), reply(CSV_LEAKY), reply(QUIZ_PARAPHRASE), reply(quiz_near)]
    llm = LLM(LLMConfig(model="openai/scripted", script=script))

    result = augment_tasks(tasks, config(tmp_path, [Style.PARAPHRASE, Style.TERSE]), llm=llm)

    assert llm.script_left() == 0
    reasons = dict(result.removed.select("id", "reason").iter_rows())
    # a rewrite that points the agent at the verifier's file is no leak (nothing there to use) but a worse task
    leaky = reasons.pop("local:csv-sum~terse")
    assert leaky.startswith("audit: accepted, but the rewrite adds a warning") and "/tests/check.py" in leaky
    assert reasons == {
        "local:score-quiz~paraphrase": "audit: needs_repair (reward_tamper)",
        "local:score-quiz~terse": f"near duplicate of local:score-quiz (jaccard {near_j:.3f})",
    }
    assert set(result.removed["stage"]) == {"augment"}
    assert result.kept.height == 1
    row = result.kept.row(0, named=True)
    assert (row["id"], row["source"], row["original_id"], row["parent_id"], row["augment_style"], row["status"]) == (
        "local:csv-sum~paraphrase", "local", "csv-sum", "local:csv-sum", "paraphrase", "accepted"
    )  # fmt: skip
    folder, parent = Path(row["path"]), tmp_path / "pool" / "csv-sum"
    assert folder == (tmp_path / "augmented" / "csv-sum~paraphrase").resolve()
    task = Task.load(folder)
    assert task.instruction == CSV_PARAPHRASE + "\n" == row["instruction"]
    assert task.version == row["version"] and task.name == "qaflow/csv-sum~paraphrase"
    for part in ("environment", "tests", "solution"):
        assert same_files(folder, parent, part)
    meta = tomllib.loads((folder / "task.toml").read_text())["metadata"]
    assert meta["augmentation"] == {
        "style": "paraphrase",
        "parent_id": "local:csv-sum",
        "parent_version": tasks.filter(pl.col("original_id") == "csv-sum")["version"][0],
        "model": "openai/scripted",
    }
    assert meta["difficulty"] == "easy"  # the parent's metadata is kept
    # rejected rewrites are kept for inspection, out of the pool's task folders
    assert sorted(p.name for p in (tmp_path / "augmented" / ".rejected").iterdir()) == [
        "csv-sum~terse",
        "score-quiz~paraphrase",
    ]
    assert result.info["verdicts"] == {"accepted": 2, "needs_repair": 1}  # the audit verdicts, before the warning rule
    assert result.info["rewritten"] == 3 and result.info["audited"] == 3

    # a rerun reuses the folder made from the same parent version: no model call, same row
    again = augment_tasks(
        tasks.filter(pl.col("original_id") == "csv-sum"),
        config(tmp_path, [Style.PARAPHRASE]),
        llm=LLM(LLMConfig(model="openai/scripted", script=[])),
    )
    assert again.kept.rows() == result.kept.rows() and again.info["reused"] == 1
    assert again.info["llm"]["total"]["calls"] == 0


def test_files_style_unchanged_rewrites_and_model_failures(tmp_path: Path):
    require_backend("bwrap")
    tasks = pool(tmp_path, ["csv-sum", "fix-calc"])
    calc = tasks.filter(pl.col("original_id") == "fix-calc")["instruction"][0]
    spec = "Columns: `date,region,amount`. Only rows whose region is `north` count.\n"
    script = [
        reply(
            "Compute the total amount described in `/app/spec.md` from `/app/sales.csv` and write it to "
            "`/app/answer.txt` as a single number with exactly two decimals (for example `1234.50`).",
            files=[{"path": "/app/spec.md", "content": spec}],
        ),
        *[ScriptedReply(content="I would rather not answer in JSON.")] * 3,
        reply(calc.upper().replace("\n", "  ")),
    ]
    llm = LLM(LLMConfig(model="openai/scripted", script=script))
    cfg = config(tmp_path, [Style.FILES, Style.VERBOSE])
    result = augment_tasks(tasks.filter(pl.col("original_id") == "csv-sum"), cfg, llm=llm)
    result2 = augment_tasks(
        tasks.filter(pl.col("original_id") == "fix-calc"),
        cfg.model_copy(update={"styles": [Style.PARAPHRASE]}),
        llm=llm,
    )
    assert llm.script_left() == 0
    assert result.kept["id"].to_list() == ["local:csv-sum~files"]
    assert result.info["verdicts"] == {"accepted": 1}
    reason = result.removed.filter(pl.col("id") == "local:csv-sum~verbose")["reason"][0]
    assert reason.startswith("model failure: no valid Rewrite after 3 replies")
    assert result2.removed.rows() == [
        ("local:fix-calc~paraphrase", "augment", "unchanged: the rewrite normalises to the original instruction")
    ]
    folder = Path(result.kept["path"][0])
    assert (folder / "environment" / "spec.md").read_text() == spec
    dockerfile = (folder / "environment" / "Dockerfile").read_text()
    assert (
        dockerfile
        == (TASKS_REPO / "csv-sum" / "environment" / "Dockerfile").read_text() + "COPY spec.md /app/spec.md\n"
    )
    assert same_files(folder, tmp_path / "pool" / "csv-sum", "tests")
    assert same_files(folder, tmp_path / "pool" / "csv-sum", "solution")


@pytest.mark.parametrize(
    ("path", "problem"),
    [
        ("/tests/spec.md", "reserved for verification"),
        ("spec.md", "not an absolute path inside a folder"),
        ("/app/sales.csv", "already used in environment/"),
    ],
)
def test_files_style_refuses_bad_paths_before_any_audit(tmp_path: Path, path: str, problem: str):
    tasks = pool(tmp_path, ["csv-sum"])
    llm = LLM(LLMConfig(model="openai/scripted", script=[reply("See /app/x.", files=[{"path": path, "content": "x"}])]))
    result = augment_tasks(tasks, config(tmp_path, [Style.FILES]), llm=llm)
    assert result.kept.height == 0 and result.info["audited"] == 0
    assert problem in result.removed["reason"][0]


def test_prompts_render_per_style():
    task = Task.load(TASKS_REPO / "csv-sum")
    headings = {
        Style.PARAPHRASE: "Style: paraphrase.",
        Style.TERSE: "Style: terse.",
        Style.VERBOSE: "Style: verbose.",
        Style.FILES: "Style: information moved into files.",
    }
    for style, heading in headings.items():
        system, user = messages_for(task, style)
        assert "Keep every requirement" in system["content"]
        assert user["content"].startswith(heading) and task.instruction.strip() in user["content"]
    files_prompt = messages_for(task, Style.FILES)[1]["content"]
    assert "New files go under /app/ (absolute paths, new names: not any of Dockerfile, sales.csv)" in files_prompt


def test_augment_cli_with_scripted_replies(tmp_path: Path):
    require_backend("bwrap")
    tasks = pool(tmp_path, ["csv-sum"])
    write_tasks(tasks, tmp_path / "tasks.parquet")
    (tmp_path / "script.json").write_text(json.dumps([json.loads(reply(CSV_PARAPHRASE).model_dump_json())]))
    app = typer.Typer(cls=RootGroup)  # qaflow's grammar: --json [FILE|-]
    register(app)
    args = ["curate", "augment", str(tmp_path / "tasks.parquet"), "--out-dir", str(tmp_path / "aug"), "--model",
            "openai/scripted", "--script", str(tmp_path / "script.json"), "--backend", "bwrap", "--repeats", "2",
            "--out", str(tmp_path / "aug.parquet"), "--json"]  # fmt: skip
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert (summary["kept"], summary["removed"], summary["info"]["verdicts"]) == (1, 0, {"accepted": 1})
    assert pl.read_parquet(tmp_path / "aug.parquet")["id"].to_list() == ["local:csv-sum~paraphrase"]


def test_styles_times_seeds_variants_each_deduplicated_and_audited(tmp_path: Path):
    require_backend("bwrap")
    tasks = pool(tmp_path, ["csv-sum"])
    second = (
        "Open `/app/sales.csv` (columns `date,region,amount`), add up the `amount` of the rows in the `north` "
        "region, and store the total in `/app/answer.txt` as one number with exactly two decimal places, such as "
        "`1234.50`."
    )
    terse = "North-region total of `amount` in /app/sales.csv (cols date,region,amount) to /app/answer.txt, 2 decimals."
    near_first = CSV_PARAPHRASE.replace("Save the result", "Store the result")
    # order of the calls: paraphrase 1, paraphrase 2, terse 1, terse 2
    script = [reply(CSV_PARAPHRASE), reply(second), reply(terse), reply(near_first)]
    llm = LLM(LLMConfig(model="openai/scripted", script=script))
    cfg = config(tmp_path, [Style.PARAPHRASE, Style.TERSE]).model_copy(update={"seeds": 2})

    result = augment_tasks(tasks, cfg, llm=llm)

    assert llm.script_left() == 0
    assert result.kept.select("id", "augment_style", "augment_variant").rows() == [
        ("local:csv-sum~paraphrase", "paraphrase", 1),
        ("local:csv-sum~paraphrase-2", "paraphrase", 2),
        ("local:csv-sum~terse", "terse", 1),
    ]
    reason = result.removed.filter(pl.col("id") == "local:csv-sum~terse-2")["reason"][0]
    assert reason.startswith("near duplicate of rewrite local:csv-sum~paraphrase (jaccard")
    assert result.info["verdicts"] == {"accepted": 3} and result.info["seeds"] == 2
    folder = Path(result.kept.filter(pl.col("augment_variant") == 2)["path"][0])
    assert folder.name == "csv-sum~paraphrase-2" and Task.load(folder).name == "qaflow/csv-sum~paraphrase-2"
    assert tomllib.loads((folder / "task.toml").read_text())["metadata"]["augmentation"]["variant"] == 2
    assert (
        "variant"
        not in tomllib.loads((folder.parent / "csv-sum~paraphrase" / "task.toml").read_text())["metadata"][
            "augmentation"
        ]
    )
    # variant 1 is the plain prompt; a later variant's prompt says which it is (so no cache or model repeats it)
    parent = Task.load(tmp_path / "pool" / "csv-sum")
    assert messages_for(parent, Style.TERSE, 1, 2) == messages_for(parent, Style.TERSE)
    assert "variant 2 of 2" in messages_for(parent, Style.TERSE, 2, 2)[1]["content"]
    # a rerun reuses each variant from its own folder
    again = augment_tasks(
        tasks, cfg.model_copy(update={"styles": [Style.PARAPHRASE]}), llm=LLM(LLMConfig(model="openai/scripted"))
    )
    assert again.info["reused"] == 2 and again.kept["instruction"].to_list() == [
        CSV_PARAPHRASE + "\n",
        second + "\n",
    ]


def test_a_rewrite_copies_the_parent_folder_as_repairs_and_hardening_do(tmp_path: Path):
    """Links stay links (the version hash counts a link as its target text) and qaflow's side files stay
    behind: the one copy every derived version starts from (`qaflow.task.copy_task_folder`)."""
    from curation.augment import Rewrite, write_rewrite
    from tests.taskfactory import write_task

    parent_dir = write_task(tmp_path / "pool", "linked")
    (parent_dir / "environment" / "data.txt").write_text("42\n")
    (parent_dir / "tests" / "data.txt").symlink_to("../environment/data.txt")
    (parent_dir / ".qaflow").mkdir()
    (parent_dir / ".qaflow" / "cache.json").write_text("{}")
    parent = Task.load(parent_dir)
    folder = tmp_path / "out" / "linked~paraphrase"
    folder.mkdir(parents=True)
    (folder / "stale.txt").write_text("from an earlier run")
    child = write_rewrite(parent, folder, Rewrite(instruction="Say 42."), Style.PARAPHRASE, "local/linked", "m")
    assert (folder / "tests" / "data.txt").is_symlink()
    assert not (folder / ".qaflow").exists() and not (folder / "stale.txt").exists()
    assert child.instruction.strip() == "Say 42." and child.version != parent.version
