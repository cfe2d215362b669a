"""Rollout jobs: every (task, effort, attempt) once, resumable, shards in sync with the ledger; stats."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from qaflow.agents.effort import EffortMap
from qaflow.agents.harness import HarnessConfig
from qaflow.cli import app
from qaflow.errors import LLMError
from qaflow.llm import LLMConfig, ScriptedReply
from qaflow.llm.config import ScriptedToolCall as Call
from qaflow.models.frame import read_rollouts
from qaflow.models.rollout import Effort
from qaflow.pool import Pool
from qaflow.rollouts.job import RolloutJobConfig, run_rollouts
from qaflow.rollouts.stats import difficulty_band, pass_at_k, pass_table, task_bands
from tests.conftest import require_backend
from tests.taskfactory import write_task
from tests.trajectories import make_record

SOLVE = [
    ScriptedReply(tool_calls=[Call(name="write", arguments={"path": "/app/out.txt", "content": "done"})]),
    ScriptedReply(content="wrote it"),
]


def _pool(tmp_path: Path) -> Path:
    root = tmp_path / "pool"
    write_task(root, "a")
    write_task(root, "b", instruction="Write `done` to /app/out.txt, then stop.\n")
    write_task(root, "broken").joinpath("task.toml").write_text("not toml [")
    return root


@pytest.mark.bwrap
def test_job_runs_every_item_once_and_resumes(tmp_path: Path) -> None:
    require_backend("bwrap")
    root = _pool(tmp_path)
    config = RolloutJobConfig(
        model=LLMConfig(model="openai/scripted", script=SOLVE),
        efforts=[Effort.LOW, Effort.XHIGH],
        attempts=2,
        jobs=2,
        backend="bwrap",
    )
    with Pool.open(root) as pool:
        first = run_rollouts(pool, config)
        assert (first.planned, first.ran, first.skipped) == (8, 8, 0)
        assert all(r.full_reward for r in first.records)
        again = run_rollouts(pool, config)
        assert (again.planned, again.ran, again.skipped) == (8, 0, 8)
        assert len(pool.ledger.rollout_ids()) == 8
        ids = {(r.task, r.effort, r.attempt) for r in pool.ledger.rollouts()}
        assert len(ids) == 8
        next_round = run_rollouts(pool, config.model_copy(update={"round": 1, "efforts": [Effort.LOW], "attempts": 1}))
        assert next_round.ran == 2 and len(pool.ledger.rollout_ids()) == 10
    shards = read_rollouts(root / ".qaflow" / "rollouts")
    assert shards.height == 10 and shards["rollout_id"].n_unique() == 10


@pytest.mark.bwrap
def test_shards_are_rewritten_from_the_ledger_after_a_lost_write(tmp_path: Path) -> None:
    require_backend("bwrap")
    root = _pool(tmp_path)
    config = RolloutJobConfig(
        model=LLMConfig(model="openai/scripted", script=SOLVE), efforts=[Effort.MEDIUM], backend="bwrap"
    )
    with Pool.open(root) as pool:
        run_rollouts(pool, config)
        shard_dir = root / ".qaflow" / "rollouts"
        for shard in shard_dir.glob("*.parquet"):
            shard.unlink()  # as if the driver died between the ledger write and the shard write
        report = run_rollouts(pool, config)
        assert report.ran == 0 and len(report.shards) == 1
    assert read_rollouts(shard_dir).height == 2


def test_pass_at_k_matches_the_unbiased_estimator() -> None:
    assert pass_at_k(4, 0, 1) == 0.0
    assert pass_at_k(4, 4, 1) == 1.0
    assert pass_at_k(4, 1, 1) == pytest.approx(0.25)
    assert pass_at_k(4, 1, 2) == pytest.approx(0.5)  # 1 - C(3,2)/C(4,2) = 1 - 3/6
    assert pass_at_k(5, 2, 3) == pytest.approx(1 - 1 / 10)
    assert pass_at_k(3, 2, 2) == 1.0
    with pytest.raises(ValueError):
        pass_at_k(2, 3, 1)


@pytest.mark.parametrize(
    ("rate", "band"),
    [(0.0, "impossible"), (0.01, "very_hard"), (0.25, "very_hard"), (0.26, "hard"), (0.5, "hard"),
     (0.75, "medium"), (0.76, "easy"), (0.99, "easy"), (1.0, "trivial")],
)  # fmt: skip
def test_difficulty_bands(rate: float, band: str) -> None:
    assert difficulty_band(rate) == band


def test_pass_table_counts_per_task_and_effort() -> None:
    from qaflow.models.frame import records_to_frame

    records = [
        make_record(task="t1", effort="low", attempt=0, reward=1.0, thinking_tokens=10),
        make_record(task="t1", effort="low", attempt=1, reward=0.0),
        make_record(task="t1", effort="low", attempt=2, reward=1.0, thinking_tokens=30),
        make_record(task="t1", effort="low", attempt=3, reward=1.0, exit_status="agent_timeout"),
        make_record(task="t1", effort="xhigh", attempt=0, reward=1.0, thinking_tokens=50),
        make_record(task="t2", effort="low", attempt=0, reward=0.0),
        make_record(task="t1", effort="low", attempt=4, reward=0.0, stop_reason="llm_error"),
        make_record(task="t1", effort="low", attempt=5, reward=None, exit_status="error"),
        make_record(task="t3", effort="low", attempt=0, reward=0.0, stop_reason="llm_error"),
    ]
    table = pass_table(records_to_frame(records), ks=(1, 2))
    low = table.filter(pl.col("task") == "t1", pl.col("effort") == "low").row(0, named=True)
    assert (low["attempts"], low["passes"], low["pass_rate"], low["band"]) == (4, 2, 0.5, "hard")
    assert low["errors"] == 2  # infrastructure and model errors apart, never failures
    only_errors = table.filter(pl.col("task") == "t3").row(0, named=True)
    assert (only_errors["attempts"], only_errors["errors"], only_errors["pass_rate"], only_errors["band"]) == (
        0, 1, None, None
    )  # fmt: skip
    assert low["pass@2"] == pytest.approx(1 - 1 / 6)
    assert low["median_thinking_passed"] == 20
    xhigh = table.filter(pl.col("task") == "t1", pl.col("effort") == "xhigh").row(0, named=True)
    assert xhigh["pass@2"] is None and xhigh["band"] == "trivial"
    assert table["effort"].to_list() == ["low", "xhigh", "low", "low"]
    bands = dict(task_bands(records_to_frame(records)).select("task", "band").iter_rows())
    assert bands == {"t1": "medium", "t2": "impossible", "t3": None}


@pytest.mark.bwrap
def test_rollout_cli_runs_reports_and_skips_bad_tasks(tmp_path: Path) -> None:
    require_backend("bwrap")
    root = _pool(tmp_path)
    script = tmp_path / "script.json"
    script.write_text(json.dumps([r.model_dump() for r in SOLVE]))
    runner = CliRunner()
    args = ["rollout", str(root), "--model", "openai/scripted", "--efforts", "low", "-k", "2", "-b", "bwrap"]
    result = runner.invoke(app, [*args, "--script", str(script), "--json"])
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout[result.stdout.index("[") :])
    assert {(r["task"], r["passes"], r["attempts"]) for r in rows} == {("test/a", 2, 2), ("test/b", 2, 2)}
    stats = runner.invoke(app, ["rollout-stats", str(root / ".qaflow" / "rollouts"), "--k", "1,2", "--json"])
    assert stats.exit_code == 0, stats.output
    assert {t["band"] for t in json.loads(stats.stdout)["tasks"]} == {"trivial"}
    bad = runner.invoke(app, [*args[:4], "--efforts", "low,extreme"])
    assert bad.exit_code == 2 and "extreme" in bad.output
    shutil.rmtree(root / ".qaflow")


NO_REASONING = "anthropic/claude-3-haiku-20240307"
"""A model litellm knows takes no `reasoning_effort` (nor `seed`)."""


def test_a_provider_that_cannot_honour_an_effort_fails_the_job_once_before_any_attempt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")  # a missing key is refused first (test_model_preflight)
    root = _pool(tmp_path)
    config = RolloutJobConfig(
        model=LLMConfig(model=NO_REASONING), efforts=[Effort.OFF, Effort.LOW, Effort.XHIGH], attempts=3
    )
    with Pool.open(root) as pool, pytest.raises(LLMError) as failed:
        run_rollouts(pool, config)
    message = str(failed.value)
    assert "low sends reasoning_effort" in message and "xhigh sends reasoning_effort" in message
    assert "off sends" not in message and "harness.efforts.per_model" in message
    with Pool.open(root) as pool:
        assert pool.ledger.rollout_ids() == set() and pool.ledger.runs() == []
    # a sampling seed the provider refuses fails the same way, even at off
    seeded = config.model_copy(update={"efforts": [Effort.OFF], "harness": HarnessConfig(seed=1)})
    with Pool.open(root) as pool, pytest.raises(LLMError, match="off sends seed"):
        run_rollouts(pool, seeded)
    # a mapping to an OpenAI parameter litellm knows the model refuses (`thinking`) is caught too
    budget = {"thinking": {"type": "enabled", "budget_tokens": 64}}
    thinking = EffortMap(per_model={"anthropic/*": {Effort.LOW: budget}})
    mapped = config.model_copy(update={"efforts": [Effort.LOW], "harness": HarnessConfig(efforts=thinking)})
    with Pool.open(root) as pool, pytest.raises(LLMError, match="low sends thinking"):
        run_rollouts(pool, mapped)
    # the CLI: one `error:` line, exit 2, nothing recorded
    out = CliRunner().invoke(app, ["rollout", str(root), "--model", NO_REASONING, "--efforts", "off,medium"])
    assert out.exit_code == 2, out.output
    assert "error:" in out.output and "medium sends reasoning_effort" in out.output and "Traceback" not in out.output
    with Pool.open(root) as pool:
        assert pool.ledger.rollout_ids() == set()


@pytest.mark.bwrap
def test_efforts_the_provider_honours_run_through_litellm(tmp_path: Path) -> None:
    """Off, and low mapped to a provider-specific key (Anthropic's `top_k`: passed through by litellm, not
    checked), run: litellm's own offline mock answers, so every attempt has a model turn and ends done."""
    require_backend("bwrap")
    root = _pool(tmp_path)
    efforts = EffortMap(per_model={"anthropic/*": {Effort.LOW: {"top_k": 5}}})
    config = RolloutJobConfig(
        model=LLMConfig(model=NO_REASONING, extra={"mock_response": "nothing to do"}),
        efforts=[Effort.OFF, Effort.LOW],
        harness=HarnessConfig(efforts=efforts, max_turns=2),
        backend="bwrap",
    )
    with Pool.open(root) as pool:
        report = run_rollouts(pool, config)
    assert report.ran == 4 and report.failed == []
    assert {r.stop_reason for r in report.records} == {"done"}, [(r.stop_reason, r.error) for r in report.records]
    assert all(r.turns >= 1 for r in report.records)


@pytest.mark.bwrap
def test_an_attempt_that_ended_in_a_model_error_is_retried_by_a_rerun_not_counted(tmp_path: Path) -> None:
    require_backend("bwrap")
    root = tmp_path / "pool"
    write_task(root, "a")
    refused = [ScriptedReply(error="bad_request")]
    config = RolloutJobConfig(model=LLMConfig(model="openai/scripted", script=refused), efforts=[Effort.LOW])
    with Pool.open(root) as pool:
        (failed,) = run_rollouts(pool, config.model_copy(update={"jobs": 1})).records
        assert failed.stop_reason == "llm_error" and failed.reward == 0.0
        assert _tallies(root) == [("low", 0, 0, 1)]  # pool show counts it apart, not as a failed attempt
        again = run_rollouts(
            pool, config.model_copy(update={"model": LLMConfig(model="openai/scripted", script=SOLVE)})
        )
        assert (again.planned, again.ran, again.retried, again.skipped) == (1, 1, 1, 0)
        (record,) = pool.ledger.rollouts()
        assert record.rollout_id == failed.rollout_id and record.full_reward and record.stop_reason == "done"
        settled = run_rollouts(pool, config)
        assert (settled.ran, settled.retried, settled.skipped) == (0, 0, 1)
        assert _tallies(root) == [("low", 1, 1, 0)]
        shown = CliRunner().invoke(app, ["pool", "show", "test/a", "--pool", str(root)], env={"COLUMNS": "200"})
        assert shown.exit_code == 0 and "rollouts (errors: an infrastructure or model error" in shown.output
    shards = read_rollouts(root / ".qaflow" / "rollouts")
    assert shards.height == 1 and shards["full_reward"].to_list() == [True]


def _tallies(root: Path) -> list[tuple[str, int, int, int]]:
    out = CliRunner().invoke(app, ["pool", "show", "test/a", "--pool", str(root), "--json"])
    assert out.exit_code == 0, out.output
    return [(t["effort"], t["graded"], t["passed"], t["errors"]) for t in json.loads(out.stdout)["rollouts"]]


def test_the_replay_policy_runs_from_the_cli_without_a_key_and_its_rows_say_scripted(tmp_path: Path) -> None:
    require_backend("bwrap")
    root = _pool(tmp_path)
    args = ["rollout", str(root), "--model", "openai/replay-oracle", "--efforts", "low,medium", "-k", "2", "-b",
            "bwrap", "--json"]  # fmt: skip
    result = CliRunner(env={"OPENAI_API_KEY": None}).invoke(app, args)
    assert result.exit_code == 0, result.output
    frame = read_rollouts(root / ".qaflow" / "rollouts")
    assert frame.height == 2 * 2 * 2 and set(frame["model"]) == {"openai/replay-oracle"}
    calls = [c for messages in frame["messages"] for m in messages for c in (m.get("tool_calls") or [])]
    commands = {json.loads(c["function"]["arguments"])["command"] for c in calls}
    assert (root / "a" / "solution" / "solve.sh").read_text() in commands  # the task's own solution, replayed
    assert frame["full_reward"].sum() >= 4  # skip_rate 0.25: most attempts replay the solution and pass
