"""Effort-order report: numbers per effort, planted inversions flagged, ordered data clean, the CLI."""

from __future__ import annotations

import json

import polars as pl
import pytest
import typer
from typer.testing import CliRunner

from qaflow.cli.grammar import RootGroup
from qaflow.models.frame import records_to_frame, write_shard
from qaflow.models.rollout import RolloutRecord
from qaflow.pool import Pool
from rl.cli import register
from rl.report import OVERALL, effort_report, plot_effort_report
from tests.trajectories import make_record

ORDERED = {"off": 0, "low": 100, "medium": 200, "xhigh": 400}


def rec(task: str, effort: str, attempt: int, thinking: int, *, ok: bool = True, **fields) -> RolloutRecord:
    return make_record(
        task=task,
        effort=effort,
        attempt=attempt,
        thinking_tokens=thinking,
        reward=1.0 if ok else 0.0,
        **fields,
    )


def ordered_records(tasks=("a/x", "b/y", "c/z"), attempts: int = 2) -> list[RolloutRecord]:
    return [
        rec(task, effort, i, thinking + 10 * i)
        for task in tasks
        for effort, thinking in ORDERED.items()
        for i in range(attempts)
    ]


def test_ordered_data_has_no_inversion():
    report = effort_report(records_to_frame(ordered_records()))
    assert report.inversions == []
    assert [r.effort for r in report.efforts] == ["off", "low", "medium", "xhigh"]
    assert len(report.pairs) == 12  # 6 effort pairs x (thinking, success)
    assert all(not p.overall and p.tasks_inverted == 0 and p.tasks_compared == 3 for p in report.pairs)
    assert report.tasks == 3


def test_planted_thinking_inversion_is_flagged_with_pair_task_and_counts():
    records = [r for r in ordered_records() if not (r.task == "b/y" and r.effort == "low")]
    records += [rec("b/y", "low", i, 700) for i in range(2)]
    report = effort_report(records_to_frame(records))

    thinking = {(i.scope, i.lower, i.higher): (i.lower_value, i.higher_value) for i in report.inversions}
    # b/y low thinks 700 on average: more than its medium (205) and xhigh (405), not more than nothing else.
    assert thinking == {
        ("b/y", "low", "medium"): (700.0, 205.0),
        ("b/y", "low", "xhigh"): (700.0, 405.0),
        # overall low = (105 + 700 + 105) / 3 = 303.33 > medium 205, < xhigh 405
        (OVERALL, "low", "medium"): pytest.approx((910 / 3, 205.0)),
    }
    assert {i.kind for i in report.inversions} == {"thinking"}
    counts = {(p.kind, p.lower, p.higher): (p.overall, p.tasks_inverted, p.tasks_compared) for p in report.pairs}
    assert counts[("thinking", "low", "medium")] == (True, 1, 3)
    assert counts[("thinking", "low", "xhigh")] == (False, 1, 3)
    assert counts[("thinking", "off", "low")] == (False, 0, 3)
    assert counts[("success", "low", "medium")] == (False, 0, 3)


def test_success_inversions_are_flagged_separately():
    records = [r for r in ordered_records() if not (r.task == "a/x" and r.effort == "xhigh")]
    records += [rec("a/x", "xhigh", i, 400, ok=False) for i in range(2)]
    report = effort_report(records_to_frame(records))
    success = report.overall_inversions("success")
    assert {(i.lower, i.higher) for i in success} == {("off", "xhigh"), ("low", "xhigh"), ("medium", "xhigh")}
    assert all(i.lower_value == 1.0 and i.higher_value == pytest.approx(4 / 6) for i in success)
    assert {(i.scope, i.lower, i.higher) for i in report.task_inversions("success")} == {
        ("a/x", "off", "xhigh"),
        ("a/x", "low", "xhigh"),
        ("a/x", "medium", "xhigh"),
    }
    assert report.overall_inversions("thinking") == []


def test_failed_long_attempts_invert_on_all_but_not_on_successes():
    records = ordered_records(tasks=("a/x",))
    records += [rec("a/x", "low", 5, 5000, ok=False)]
    on_all = effort_report(records_to_frame(records), on="all")
    on_successes = effort_report(records_to_frame(records), on="successes")
    assert {(i.scope, i.lower, i.higher) for i in on_all.inversions if i.kind == "thinking"} == {
        (OVERALL, "low", "medium"),
        (OVERALL, "low", "xhigh"),
        ("a/x", "low", "medium"),
        ("a/x", "low", "xhigh"),
    }
    assert on_successes.overall_inversions("thinking") == []
    low = on_successes.efforts[1]
    assert low.mean_thinking == pytest.approx((100 + 110 + 5000) / 3)
    assert low.mean_thinking_successes == pytest.approx(105.0)


def test_successes_mode_skips_efforts_without_successes():
    records = [rec("a/x", "low", 0, 900, ok=False), rec("a/x", "medium", 0, 100)]
    report = effort_report(records_to_frame(records), on="successes")
    assert report.overall_inversions("thinking") == []
    pair = next(p for p in report.pairs if p.kind == "thinking")
    assert (pair.tasks_compared, pair.tasks_inverted) == (0, 0)


def test_tolerance_is_relative():
    records = [rec("a/x", "low", 0, 210), rec("a/x", "medium", 0, 200)]
    frame = records_to_frame(records)
    assert len(effort_report(frame).overall_inversions("thinking")) == 1
    assert effort_report(frame, tolerance=0.049).overall_inversions("thinking") != []
    assert effort_report(frame, tolerance=0.05).overall_inversions("thinking") == []
    with pytest.raises(ValueError):
        effort_report(frame, tolerance=-1)


def test_table_numbers():
    records = [
        rec("a/x", "low", 0, 10, timings={"agent": 3.0, "total": 5.0}),
        rec("a/x", "low", 1, 30, ok=False, timings={"total": 7.0}),
        rec("a/x", "low", 2, 20, exit_status="agent_timeout", timings={}),
        rec("a/x", "medium", 0, 50, tool_steps=1),
        rec("a/x", "low", 3, 900, ok=False, stop_reason="llm_error"),  # no result: left out, counted apart
        rec("a/x", "low", 4, 900, ok=False, exit_status="error"),
    ]
    report = effort_report(records_to_frame(records))
    assert report.errors == 2
    table = report.table()
    low = table.row(0, named=True)
    # make_record: 6 assistant turns of 20 completion tokens (5 tool steps + final), 2 with tool_steps=1
    assert low == {
        "effort": "low",
        "attempts": 3,
        "successes": 1,
        "success_rate": pytest.approx(1 / 3),
        "mean_thinking": pytest.approx(20.0),
        "mean_thinking_successes": pytest.approx(10.0),
        "mean_output_tokens": pytest.approx(120.0),
        "mean_wall_s": pytest.approx(5.0),
    }
    medium = table.row(1, named=True)
    assert medium["mean_output_tokens"] == pytest.approx(40.0)
    assert medium["mean_wall_s"] is None


def test_plot_is_written(tmp_path):
    records = [r for r in ordered_records() if not (r.task == "b/y" and r.effort == "low")]
    records += [rec("b/y", "low", 0, 700)]
    path = plot_effort_report(effort_report(records_to_frame(records)), tmp_path / "out" / "effort.png")
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data) > 10_000


def _cli() -> typer.Typer:
    root = typer.Typer(cls=RootGroup)  # qaflow's grammar: --json [FILE|-]
    register(root)
    return root


def test_cli_report_parquet_json_and_png(tmp_path):
    records = [r for r in ordered_records() if not (r.task == "b/y" and r.effort == "low")]
    records += [rec("b/y", "low", i, 700) for i in range(2)]
    write_shard(records, tmp_path / "shards")
    png = tmp_path / "report.png"
    out = CliRunner().invoke(_cli(), ["rl", "report", str(tmp_path / "shards"), "--json", "--png", str(png)])
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert data["on"] == "all"
    assert [e["effort"] for e in data["efforts"]] == ["off", "low", "medium", "xhigh"]
    assert {(i["scope"], i["lower"], i["higher"]) for i in data["inversions"]} == {
        ("b/y", "low", "medium"),
        ("b/y", "low", "xhigh"),
        (OVERALL, "low", "medium"),
    }
    assert png.read_bytes()[:4] == b"\x89PNG"

    text = CliRunner().invoke(_cli(), ["rl", "report", str(tmp_path / "shards")])
    assert text.exit_code == 0, text.output
    assert "INVERTED" in text.stdout
    assert "b/y: thinking low 700 > medium 205" in text.stdout
    assert "overall inversions: 1" in text.stdout


def test_cli_report_reads_a_pool_ledger(tmp_path):
    with Pool.open(tmp_path) as pool:
        for r in ordered_records(tasks=("a/x",)):
            pool.ledger.put_rollout(r)
    out = CliRunner().invoke(_cli(), ["rl", "report", str(tmp_path), "--json", "--on", "successes"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert data["on"] == "successes"
    assert sum(e["attempts"] for e in data["efforts"]) == 8
    assert data["inversions"] == []


def test_cli_report_usage_errors(tmp_path):
    missing = CliRunner().invoke(_cli(), ["rl", "report", str(tmp_path / "nope")])
    assert missing.exit_code == 2
    write_shard(ordered_records(), tmp_path / "s")
    bad_on = CliRunner().invoke(_cli(), ["rl", "report", str(tmp_path / "s"), "--on", "failures"])
    assert bad_on.exit_code == 2


def test_round_takes_one_rounds_attempts_and_graded_is_the_rounds_rule(tmp_path):
    from rl.graded import split_graded

    records = [rec("a/x", "low", i, 100, round=0) for i in range(2)]
    records += [rec("a/x", "low", i, 900, round=1) for i in range(3)]
    left_out = [
        make_record(task="a/x", effort="low", attempt=5 + i, round=1, thinking_tokens=5000, reward=r, **fields)
        for i, (r, fields) in enumerate(
            [
                (0.0, {"stop_reason": "llm_error"}),
                (None, {"exit_status": "error"}),
                (None, {"exit_status": "verifier_timeout"}),
                (None, {"exit_status": "agent_timeout"}),
            ]
        )
    ]
    frame = records_to_frame(records + left_out)
    both = effort_report(frame)
    assert both.rounds == [0, 1] and both.efforts[0].attempts == 5
    one = effort_report(frame, round=1)
    assert one.rounds == [1]
    assert (one.efforts[0].attempts, one.efforts[0].mean_thinking) == (3, 900.0)
    # the same attempts a round scores: rl.graded's rule, with every reason counted
    graded, excluded = split_graded(frame.filter(pl.col("round") == 1))
    assert one.efforts[0].attempts == graded.height and one.errors == excluded.height == 4
    assert one.excluded == {"llm_error": 1, "error": 1, "verifier_timeout": 1, "no_verifier_result": 1}

    write_shard(records + left_out, tmp_path / "s")
    out = CliRunner().invoke(_cli(), ["rl", "report", str(tmp_path / "s"), "--round", "0", "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert data["rounds"] == [0] and data["efforts"][0]["attempts"] == 2 and data["errors"] == 0
    text = CliRunner().invoke(_cli(), ["rl", "report", str(tmp_path / "s")])
    assert "rounds 0, 1 counted together; choose one with --round" in text.stdout
    assert "4 attempts not correctly graded are left out (1 llm_error, 1 error, 1 verifier_timeout" in text.stdout
    missing = CliRunner().invoke(_cli(), ["rl", "report", str(tmp_path / "s"), "--round", "7"])
    assert missing.exit_code == 2 and "no rollouts in round 7" in missing.output
