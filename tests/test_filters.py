"""Rollout filters: each rule against trajectories that break exactly it, robustness, the funnel, config, CLI, bench."""

from __future__ import annotations

import copy
import json
import random
import re
import textwrap
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from typer.testing import CliRunner

from bench.filter_throughput import bench_config, polars_verdict, python_filter, python_structure_ok, synthetic_frame
from curation.filters import (
    ColumnRule,
    Dedup,
    FilterConfig,
    FilterConfigError,
    MinTurns,
    NoTimeout,
    StructureValid,
    TokenBudget,
    VerifierPassed,
    apply_filters,
    message_chars,
    structure_reasons,
)
from qaflow.agents.tool_specs import TOOLS
from qaflow.cli import app
from qaflow.models.frame import MESSAGE_DTYPE, ROLLOUT_SCHEMA, read_rollouts, records_to_frame, write_shard
from qaflow.models.rollout import RolloutRecord, SideCall
from tests.trajectories import make_record

T0 = datetime(2025, 3, 1, tzinfo=UTC)
BUDGET = TokenBudget(max_thinking_tokens=1_000, max_completion_tokens=5_000, max_message_chars=10_000)
ALL_RULES = FilterConfig(
    rules=[
        "not_scripted",
        NoTimeout(),
        VerifierPassed(),
        "no_side_calls",
        "clean_text",
        MinTurns(),
        BUDGET,
        StructureValid(),
        Dedup(),
    ]
)


def record(attempt: int = 0, **fields: Any) -> RolloutRecord:
    """A passing trajectory (system, user, 5 bash turns c0..c4, final answer: 6 turns), distinct per attempt."""
    fields.setdefault("created_at", T0 + timedelta(minutes=attempt))
    return make_record(attempt=attempt, task=f"demo/task-{attempt}", **fields)


def edited(change: Any, **fields: Any) -> RolloutRecord:
    """`record()` with its messages passed through `change(messages)` (which edits them in place)."""
    messages = copy.deepcopy(record().messages)
    change(messages)
    return record(messages=messages, **fields)


def verdicts(frame: pl.DataFrame, config: FilterConfig = ALL_RULES) -> dict[str, list[str | None]]:
    """Each rule on its own over the whole frame: rule -> per-row reason (None: kept)."""
    out = {}
    for rule in config.rules:
        verdict = rule.check(frame)
        keep = frame.select(verdict.keep.alias("keep")).to_series().fill_null(False)
        reason = pl.lit(verdict.reason) if isinstance(verdict.reason, str) else verdict.reason
        reasons = frame.with_columns(reason.alias("_reason"))["_reason"] if isinstance(reason, pl.Expr) else reason
        out[rule.step] = [None if k else r for k, r in zip(keep.to_list(), reasons.to_list(), strict=True)]
    return out


def call(messages: list[dict[str, Any]], call_id: str) -> dict[str, Any]:
    return next(c for m in messages for c in m.get("tool_calls") or [] if c["id"] == call_id)


def result_index(messages: list[dict[str, Any]], call_id: str) -> int:
    return next(i for i, m in enumerate(messages) if m.get("tool_call_id") == call_id)


def set_args(call_id: str, arguments: str) -> Any:
    return lambda ms: call(ms, call_id)["function"].update(arguments=arguments)


def drop_result(call_id: str) -> Any:
    return lambda ms: ms.pop(result_index(ms, call_id))


def add_result_copy(call_id: str) -> Any:
    return lambda ms: ms.insert(result_index(ms, call_id) + 1, dict(ms[result_index(ms, call_id)]))


def rename_call(old: str, new: str) -> Any:
    def change(ms: list[dict[str, Any]]) -> None:
        call(ms, old)["id"] = new
        ms[result_index(ms, old)]["tool_call_id"] = new

    return change


def orphan_result(ms: list[dict[str, Any]]) -> None:
    ms.insert(result_index(ms, "c2") + 1, {"role": "tool", "tool_call_id": "zz", "content": "?"})


def ends_pending(ms: list[dict[str, Any]]) -> None:
    del ms[-2:]


HUGE = "x" * 20_000

SINGLE_RULE_CASES: list[tuple[str, RolloutRecord, str, str]] = [
    ("scripted", record(meta={"scripted": True}), "not_scripted", "scripted policy, not a model (openai/scripted)"),
    ("replay", record(model="openai/replay-oracle"), "not_scripted", "scripted policy, not a model (openai/replay"),
    ("reward below full", record(reward=0.5), "verifier_passed", "reward 0.5 is not full"),
    ("no reward", record(reward=None), "verifier_passed", "no reward"),
    ("agent timeout", record(exit_status="agent_timeout"), "no_timeout", "agent timeout"),
    ("verifier timeout", record(exit_status="verifier_timeout"), "no_timeout", "verifier timeout"),
    ("error", record(exit_status="error", error="LLMError: quota"), "no_timeout", "error: LLMError: quota"),
    (
        "side calls",
        record(side_calls=[SideCall(kind="subagent", turn=1), SideCall(kind="summarisation", turn=3)]),
        "no_side_calls",
        "2 side calls (subagent, summarisation)",
    ),
    ("repaired text", edited(lambda ms: ms[3].update(content="bad \udcff byte")), "clean_text", "not UTF-8"),
    ("few turns", record(tool_steps=2), "min_turns", "3 turns < 5"),
    ("thinking budget", record(thinking_tokens=4_000), "token_budget", "4000 thinking tokens > 1000"),
    (
        "completion budget",
        record(usage=[{"completion_tokens": 1_000}] * 6),
        "token_budget",
        "6000 completion tokens > 5000",
    ),
    (
        "huge tool output",
        edited(lambda ms: ms[5].update(content=HUGE)),
        "token_budget",
        "message 5 has 20000 chars > 10000",
    ),
    ("call without result", edited(drop_result("c3")), "structure_valid", "tool call c3 has no result"),
    ("call answered twice", edited(add_result_copy("c1")), "structure_valid", "tool call c1 has 2 results"),
    (
        "result without call",
        edited(orphan_result),
        "structure_valid",
        "tool result at message 8 answers no call of its assistant turn ('zz')",
    ),
    ("duplicate call id", edited(rename_call("c3", "c1")), "structure_valid", "duplicate tool call id c1"),
    (
        "arguments not JSON",
        edited(set_args("c1", '{"command": "ls')),
        "structure_valid",
        "arguments of call c1 are not valid JSON",
    ),
    (
        "arguments not an object",
        edited(set_args("c1", '["ls"]')),
        "structure_valid",
        "arguments of call c1 are not a JSON object",
    ),
    (
        "missing required argument",
        edited(set_args("c2", '{"cmd": "ls"}')),
        "structure_valid",
        "missing required argument 'command' for bash (call c2)",
    ),
    (
        "required argument null",
        edited(set_args("c2", '{"command": null}')),
        "structure_valid",
        "missing required argument 'command' for bash (call c2)",
    ),
    (
        "tool not offered",
        edited(lambda ms: call(ms, "c0")["function"].update(name="python")),
        "structure_valid",
        "call c0 uses tool 'python' that is not offered",
    ),
    (
        "assistant before user",
        edited(lambda ms: ms.pop(1)),
        "structure_valid",
        "message 1 is assistant, not user",
    ),
    (
        "system in the middle",
        edited(lambda ms: ms.insert(4, {"role": "system", "content": "again"})),
        "structure_valid",
        "system message at position 4",
    ),
    (
        "unknown role",
        edited(lambda ms: ms.insert(4, {"role": "narrator", "content": "meanwhile"})),
        "structure_valid",
        "message 4 has unknown role 'narrator'",
    ),
    (
        "tool result after user",
        edited(lambda ms: ms.insert(2, {"role": "tool", "tool_call_id": "c0", "content": "early"})),
        "structure_valid",
        "tool result at message 2 does not follow an assistant turn",
    ),
    (
        "result without id",
        edited(lambda ms: ms.insert(result_index(ms, "c4") + 1, {"role": "tool", "content": "?"})),
        "structure_valid",
        "tool result at message 12 has no tool_call_id",
    ),
    (
        "empty assistant turn",
        edited(lambda ms: ms.insert(-1, {"role": "assistant", "content": " \n", "reasoning_content": ""})),
        "structure_valid",
        "empty assistant turn at message 12",
    ),
    ("ends with a tool result", record(final=None), "structure_valid", "ends with a tool message"),
    (
        "ends with pending calls",
        edited(ends_pending),
        "structure_valid",
        "ends with an assistant turn whose tool calls have no results",
    ),
]


@pytest.mark.parametrize(
    ("rec", "rule", "reason"), [c[1:] for c in SINGLE_RULE_CASES], ids=[c[0] for c in SINGLE_RULE_CASES]
)
def test_each_rule_removes_exactly_its_violation(rec: RolloutRecord, rule: str, reason: str) -> None:
    frame = records_to_frame([record(attempt=99), rec])
    by_rule = verdicts(frame)
    assert {name: rows[0] for name, rows in by_rule.items()} == dict.fromkeys(by_rule)  # the control passes all
    failing = {name: rows[1] for name, rows in by_rule.items() if rows[1] is not None}
    assert list(failing) == [rule]
    assert reason in failing[rule]

    result = apply_filters(frame, ALL_RULES)
    assert result.kept["rollout_id"].to_list() == [frame["rollout_id"][0]]
    assert result.removed.select("rollout_id", "rule").rows() == [(frame["rollout_id"][1], rule)]
    assert reason in result.removed["reason"][0]


def test_dedup_keeps_the_first_by_order_and_names_it() -> None:
    same = record().messages
    first = record(attempt=1, messages=same, created_at=T0 + timedelta(hours=1))
    later = record(attempt=2, messages=same, created_at=T0 + timedelta(hours=2))
    other = record(attempt=3, created_at=T0)
    frame = records_to_frame([later, other, first])
    by_rule = verdicts(frame)
    assert {name for name, rows in by_rule.items() if any(rows)} == {"dedup"}
    assert by_rule["dedup"] == [f"duplicate of {first.rollout_id}", None, None]

    newest = FilterConfig(rules=[Dedup(descending=True)])
    assert apply_filters(frame, newest).removed.select("rollout_id", "reason").rows() == [
        (first.rollout_id, f"duplicate of {later.rollout_id}")
    ]


def test_dedup_compares_whole_messages_not_just_text() -> None:
    a = record(attempt=1, messages=record().messages)
    b = edited(set_args("c2", '{"command": "rm -rf /tmp/x"}'), attempt=2)
    frame = records_to_frame([a, b, record(attempt=3, messages=b.messages)])
    assert verdicts(frame, FilterConfig(rules=[Dedup()]))["dedup"] == [None, None, f"duplicate of {b.rollout_id}"]


def test_dedup_only_sees_rows_that_survived_earlier_rules() -> None:
    same = record().messages
    timed_out = record(attempt=1, messages=same, exit_status="agent_timeout")
    copy_ok = record(attempt=2, messages=same)
    result = apply_filters(records_to_frame([timed_out, copy_ok]), ALL_RULES)
    assert result.kept["rollout_id"].to_list() == [copy_ok.rollout_id]
    assert result.removed.select("rollout_id", "rule").rows() == [(timed_out.rollout_id, "no_timeout")]


def test_verifier_passed_with_a_reward_threshold() -> None:
    frame = records_to_frame([record(attempt=i, reward=r) for i, r in enumerate([0.3, 0.5, 0.9, None])])
    rule = VerifierPassed(full_reward=False, min_reward=0.5)
    assert verdicts(frame, FilterConfig(rules=[rule]))["verifier_passed"] == [
        "reward 0.3 < 0.5",
        None,
        None,
        "no reward",
    ]


def test_no_timeout_can_keep_errors() -> None:
    frame = records_to_frame([record(exit_status="error", error="x"), record(attempt=1, exit_status="agent_timeout")])
    assert verdicts(frame, FilterConfig(rules=[NoTimeout(drop_errors=False)]))["no_timeout"] == [None, "agent timeout"]


def test_no_timeout_removes_a_row_without_an_exit_status() -> None:
    frame = records_to_frame([record(), record(attempt=1)])
    frame = frame.with_columns(pl.when(pl.col("attempt") == 1).then(None).otherwise(pl.col("exit_status"))
                               .alias("exit_status"))  # fmt: skip
    for rule in (NoTimeout(), NoTimeout(drop_errors=False)):
        assert verdicts(frame, FilterConfig(rules=[rule]))["no_timeout"] == [None, "exit status missing"]


@pytest.mark.parametrize("limit", ["max_thinking_tokens", "max_completion_tokens", "max_message_chars"])
def test_a_token_budget_keeps_a_row_exactly_at_its_limit_and_removes_one_over(limit: str) -> None:
    frame = records_to_frame([record()])
    measured = frame.select(
        pl.col("thinking_tokens").alias("max_thinking_tokens"),
        pl.col("usage")
        .list.eval(pl.element().struct.field("completion_tokens"))
        .list.sum()
        .alias("max_completion_tokens"),
        message_chars().list.max().alias("max_message_chars"),
    ).row(0, named=True)
    at = TokenBudget(**{"max_message_chars": None, limit: measured[limit]})
    over = TokenBudget(**{"max_message_chars": None, limit: measured[limit] - 1})
    assert measured[limit] > 0
    assert verdicts(frame, FilterConfig(rules=[at]))["token_budget"] == [None]
    assert verdicts(frame, FilterConfig(rules=[over]))["token_budget"] != [None]


def test_min_turns_counts_assistant_messages_not_the_turns_column() -> None:
    frame = records_to_frame([record(tool_steps=3, turns=50), record(attempt=1, tool_steps=1, turns=0)])
    assert verdicts(frame, FilterConfig(rules=[MinTurns(n=3)]))["min_turns"] == [None, "2 turns < 3"]


def test_parallel_calls_answered_in_any_order_are_valid() -> None:
    def two_calls(ms: list[dict[str, Any]]) -> None:
        extra = {"id": "p1", "type": "function", "function": {"name": "read", "arguments": '{"path": "a.txt"}'}}
        ms[2]["tool_calls"].append(extra)
        ms.insert(3, {"role": "tool", "tool_call_id": "p1", "content": "a"})  # answered before c0

    good = edited(two_calls)
    missing = edited(lambda ms: (two_calls(ms), ms.pop(4)))
    frame = records_to_frame([good, missing])
    assert structure_reasons(frame).to_list() == [None, "tool call c0 has no result"]


def test_first_problem_by_position_is_reported() -> None:
    def two_problems(ms: list[dict[str, Any]]) -> None:
        set_args("c3", "{")(ms)
        set_args("c1", '{"cmd": 1}')(ms)

    assert structure_reasons(records_to_frame([edited(two_problems)])).to_list() == [
        "missing required argument 'command' for bash (call c1)"
    ]


def test_required_arguments_come_from_each_rows_tools() -> None:
    own_tools = [
        {
            "type": "function",
            "function": {
                "name": "bash",
                "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]},
            },
        }
    ]
    own = edited(lambda ms: [set_args(f"c{i}", '{"cmd": "ls"}')(ms) for i in range(5)], tools=own_tools)
    harness = edited(lambda ms: [set_args(f"c{i}", '{"cmd": "ls"}')(ms) for i in range(5)], attempt=1)
    no_tools = record(attempt=2, tools=[])
    frame = records_to_frame([own, harness, no_tools])
    assert structure_reasons(frame).to_list() == [
        None,
        "missing required argument 'command' for bash (call c0)",
        "call c0 uses tool 'bash' that is not offered",
    ]


def test_required_argument_names_with_quotes_and_backslashes() -> None:
    keys = ["it's", "a\\b", 'q"q']
    tool = {"type": "function", "function": {"name": "odd", "parameters": {"type": "object", "required": keys}}}

    def odd_calls(arguments: dict[str, Any]) -> Any:
        def change(ms: list[dict[str, Any]]) -> None:
            for i in range(5):
                call(ms, f"c{i}")["function"].update(name="odd", arguments=json.dumps(arguments))

        return change

    complete = dict.fromkeys(keys, 1)
    rows = [edited(odd_calls(complete), tools=[tool])]
    rows += [edited(odd_calls({k: v for k, v in complete.items() if k != key}), tools=[tool]) for key in keys]
    assert structure_reasons(records_to_frame(rows)).to_list() == [
        None,
        *(f"missing required argument '{key}' for odd (call c0)" for key in keys),
    ]


def broken_rows() -> pl.DataFrame:
    """Rows no record would produce: null messages, null message elements, null fields, calls on users."""
    base = records_to_frame([record(attempt=i) for i in range(6)])
    messages = base["messages"].to_list()
    messages[0] = None
    messages[1] = []
    messages[2] = [*messages[2][:3], None, *messages[2][4:]]
    messages[3] = [{**m, "role": None} for m in messages[3]]
    messages[4][1] = {**messages[4][1], "tool_calls": [None, {"id": None, "type": None, "function": None}]}
    messages[5][2] = {**messages[5][2], "tool_calls": [{**messages[5][2]["tool_calls"][0], "function": None}]}
    return base.with_columns(
        pl.Series("messages", messages, dtype=pl.List(MESSAGE_DTYPE)), tools_json=pl.lit("{not json")
    )


def test_broken_structure_is_filtered_with_reasons_not_exceptions() -> None:
    frame = broken_rows()
    reasons = structure_reasons(frame).to_list()
    assert reasons[:4] == [
        "no messages",
        "no messages",
        "tool call c0 has no result",  # its result, message 3, is null
        "message 0 is (missing), not user (optional system, then user, then assistant/tool/user)",
    ]
    assert reasons[4] == "message 1 has tool calls but is a user message"
    assert reasons[5] == "arguments of call c0 are not valid JSON"
    result = apply_filters(frame)
    assert result.kept.height == 0
    assert sorted(set(result.removed["rule"])) == ["min_turns", "structure_valid"]


def test_huge_outputs_and_bad_bytes_do_not_crash_the_default_filters() -> None:
    five_mb = "y" * (5 * 1024 * 1024)
    rows = [
        edited(lambda ms: ms[5].update(content=five_mb)),
        edited(lambda ms: ms[3].update(content="caf\udcff\udcfe"), attempt=1),
        record(attempt=2),
    ]
    frame = records_to_frame(rows)
    assert frame["text_repaired"].to_list() == [False, True, False]
    result = apply_filters(frame)
    assert result.kept["rollout_id"].to_list() == [rows[2].rollout_id]
    assert result.removed.select("rule", "reason").rows() == [
        ("clean_text", "text had bytes that are not UTF-8 (replaced)"),
        ("token_budget", "message 5 has 5242880 chars > 200000"),
    ]


def mixed_frame() -> pl.DataFrame:
    rows = []
    for i in range(24):
        source, effort = ("local", "imported")[i % 2], ("low", "medium", "xhigh")[i % 3]
        broken = i % 6
        fields: dict[str, Any] = {"source": source, "effort": effort}
        if broken == 1:
            fields["reward"] = 0.0
        elif broken == 2:
            fields["exit_status"] = "agent_timeout"
            fields["reward"] = 0.0
        elif broken == 3:
            fields["tool_steps"] = 1
        rows.append(edited(drop_result("c1"), attempt=i, **fields) if broken == 4 else record(attempt=i, **fields))
    rows.append(record(attempt=100, messages=rows[0].messages, source="local", effort="low"))
    return records_to_frame(rows)


def test_funnel_counts_add_up_overall_and_per_group() -> None:
    frame = mixed_frame()
    result = apply_filters(frame)
    funnel = result.funnel
    assert funnel["rule"].to_list() == [r.step for r in FilterConfig().rules]
    assert funnel["rows_in"][0] == frame.height == 25
    assert funnel["rows_in"].to_list()[1:] == funnel["rows_out"].to_list()[:-1]
    assert (funnel["rows_in"] - funnel["removed"] == funnel["rows_out"]).all()
    assert funnel["rows_out"][-1] == result.kept.height
    assert dict(zip(funnel["rule"], funnel["removed"], strict=True)) == {
        "not_scripted": 0,
        "no_timeout": 4,
        "verifier_passed": 4,
        "no_side_calls": 0,
        "clean_text": 0,
        "min_turns": 4,
        "token_budget": 0,
        "structure_valid": 4,
        "reward_hack": 0,
        "dedup": 1,
    }
    assert result.kept.height == 8
    assert result.kept.schema == pl.Schema(ROLLOUT_SCHEMA)
    ids = set(frame["rollout_id"])
    assert set(result.kept["rollout_id"]) | set(result.removed["rollout_id"]) == ids
    assert not set(result.kept["rollout_id"]) & set(result.removed["rollout_id"])

    groups = result.funnel_by_group
    per_group = groups.group_by("source", "effort").agg(
        pl.col("rows_in").first(), pl.col("removed").sum(), pl.col("rows_out").last()
    )
    assert per_group.height == 6
    assert (per_group["rows_in"] - per_group["removed"] == per_group["rows_out"]).all()
    assert per_group["rows_in"].sum() == 25
    kept_by_group = result.kept.group_by("source", "effort").len()
    joined = per_group.join(kept_by_group, on=["source", "effort"], how="left").fill_null(0)
    assert (joined["rows_out"] == joined["len"]).all()
    summed = groups.group_by("step").agg(pl.col("removed", "rows_in", "rows_out").sum()).sort("step")
    assert summed["removed"].to_list() == funnel["removed"].to_list()
    assert summed["rows_in"].to_list() == funnel["rows_in"].to_list()
    removed_counts = result.removed.group_by("rule").len()
    assert dict(removed_counts.iter_rows()) == {
        r: n for r, n in zip(funnel["rule"], funnel["removed"], strict=True) if n
    }


def test_funnel_order_is_the_config_order() -> None:
    row = record(exit_status="agent_timeout", reward=0.0)
    frame = records_to_frame([row])
    first = apply_filters(frame, FilterConfig(rules=["no_timeout", "verifier_passed"]))
    second = apply_filters(frame, FilterConfig(rules=["verifier_passed", "no_timeout"]))
    assert first.removed["rule"].to_list() == ["no_timeout"]
    assert second.removed["rule"].to_list() == ["verifier_passed"]
    assert second.funnel.select("rule", "removed").rows() == [("verifier_passed", 1), ("no_timeout", 0)]


def test_empty_frame_and_empty_config() -> None:
    empty = apply_filters(records_to_frame([]))
    assert empty.kept.height == 0 and empty.removed.height == 0
    assert empty.funnel["rows_in"].to_list() == [0] * len(FilterConfig().rules)
    nothing = apply_filters(mixed_frame(), FilterConfig(rules=[]))
    assert nothing.kept.height == 25 and nothing.funnel.height == 0
    assert nothing.summary()["rows_in"] == 25
    no_budget = apply_filters(mixed_frame(), FilterConfig(rules=[TokenBudget(max_message_chars=None)]))
    assert no_budget.kept.height == 25 and no_budget.funnel["removed"].to_list() == [0]


def test_column_rules_and_user_entry_points(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "my_rules.py").write_text(
        textwrap.dedent(
            """
            import polars as pl

            def short_tasks(max_chars: int):
                return pl.col("task").str.len_chars() <= max_chars

            def not_a_rule():
                return 3

            def newest():
                return pl.col("created_at") == pl.col("created_at").max()
            """
        )
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    config = FilterConfig.model_validate(
        {
            "rules": [
                {"rule": "column", "column": "effort", "op": "in", "value": ["medium", "xhigh"]},
                {"rule": "column", "name": "good enough", "column": "reward", "op": ">=", "value": 0.5},
                {"rule": "user", "entry_point": "my_rules:short_tasks", "options": {"max_chars": 15}},
            ]
        }
    )
    assert [r.step for r in config.rules] == ["effort in ['medium', 'xhigh']", "good enough", "my_rules:short_tasks"]
    rows = [
        record(attempt=0, effort="low"),
        record(attempt=1, reward=0.25),
        record(attempt=2, reward=None),
        make_record(attempt=3, task="a/very-long-task-name"),
        record(attempt=4),
    ]
    result = apply_filters(records_to_frame(rows), config)
    assert result.kept["rollout_id"].to_list() == [rows[4].rollout_id]
    assert result.removed.select("rule", "reason").rows() == [
        ("effort in ['medium', 'xhigh']", "effort in ['medium', 'xhigh'] is false (effort = low)"),
        ("good enough", "reward >= 0.5 is false (reward = 0.25)"),
        ("good enough", "reward >= 0.5 is false (reward = null)"),
        ("my_rules:short_tasks", "my_rules:short_tasks is false"),
    ]
    newest = FilterConfig.model_validate({"rules": ["no_timeout", {"rule": "user", "entry_point": "my_rules:newest"}]})
    timed_out_last = [record(attempt=0), record(attempt=1), record(attempt=2, exit_status="agent_timeout")]
    only_newest = apply_filters(records_to_frame(timed_out_last), newest)
    assert only_newest.kept["rollout_id"].to_list() == [timed_out_last[1].rollout_id]  # newest among survivors
    assert only_newest.removed.select("rollout_id", "rule").rows() == [
        (timed_out_last[2].rollout_id, "no_timeout"),
        (timed_out_last[0].rollout_id, "my_rules:newest"),
    ]
    bad_user_rules = {
        "my_rules:not_a_rule": "returned int, not a polars expression",
        "my_rules:missing": "my_rules:missing is not a function",
        "my_rules:short_tasks": "my_rules:short_tasks(**{}) failed: TypeError",
    }
    for entry_point, message in bad_user_rules.items():
        with pytest.raises(ValueError, match=re.escape(message)):
            FilterConfig.model_validate({"rules": [{"rule": "user", "entry_point": entry_point}]})


def write(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


def test_config_from_yaml_toml_and_json(tmp_path: Path) -> None:
    yaml_file = write(
        tmp_path / "f.yaml",
        """
        rules:
          - no_timeout
          - rule: verifier_passed
            full_reward: false
            min_reward: 0.5
          - min_turns: {n: 3}
          - token_budget:
              max_thinking_tokens: 100
          - {rule: column, column: effort, op: "!=", value: "off"}
        """,
    )
    toml_file = write(
        tmp_path / "f.toml",
        """
        [[rules]]
        rule = "no_timeout"

        [[rules]]
        rule = "verifier_passed"
        full_reward = false
        min_reward = 0.5

        [[rules]]
        rule = "min_turns"
        n = 3

        [[rules]]
        rule = "token_budget"
        max_thinking_tokens = 100

        [[rules]]
        rule = "column"
        column = "effort"
        op = "!="
        value = "off"
        """,
    )
    json_file = tmp_path / "f.json"
    json_file.write_text(json.dumps(FilterConfig.load(toml_file).model_dump(mode="json")["rules"]))
    loaded = [FilterConfig.load(p) for p in (yaml_file, toml_file, json_file)]
    assert loaded[0].model_dump() == loaded[1].model_dump() == loaded[2].model_dump()
    rules = loaded[0].rules
    assert [r.rule for r in rules] == ["no_timeout", "verifier_passed", "min_turns", "token_budget", "column"]
    assert isinstance(rules[1], VerifierPassed) and rules[1].min_reward == 0.5 and not rules[1].full_reward
    assert isinstance(rules[2], MinTurns) and rules[2].n == 3
    assert isinstance(rules[3], TokenBudget) and rules[3].max_thinking_tokens == 100
    assert rules[3].max_message_chars == 200_000
    assert isinstance(rules[4], ColumnRule) and rules[4].value == "off"


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        (
            "unknown.yaml",
            "rules: [no_such_rule]",
            "rules.0: Input tag 'no_such_rule' found using 'rule' does not match",
        ),
        ("option.yaml", "rules: [{min_turns: {n: many}}]", "rules.0.min_turns.n: Input should be a valid integer"),
        (
            "extra.yaml",
            "rules: [{rule: min_turns, turns: 3}]",
            "rules.0.min_turns.turns: Extra inputs are not permitted",
        ),
        ("twice.yaml", "rules: [min_turns, min_turns]", "step names used twice: min_turns"),
        ("syntax.yaml", "rules: [min_turns", "cannot read"),
        ("syntax.toml", "[[rules]\nrule = 1", "cannot read"),
        ("shape.yaml", "just text", "expected a mapping with a `rules` list"),
        (
            "column.yaml",
            "rules: [{rule: column, column: nope, op: '==', value: 1}]",
            "unknown or non-scalar column 'nope'",
        ),
        ("listy.yaml", "rules: [{rule: column, column: effort, op: in, value: low}]", "op in needs a list value"),
        ("types.yaml", "rules: [{rule: column, column: reward, op: '==', value: x}]", "cannot compare string with"),
        ("order.yaml", "rules: [{rule: dedup, order_by: [messages]}]", "unknown or non-scalar column 'messages'"),
        ("import.yaml", "rules: [{rule: user, entry_point: 'no_such_module_x:f'}]", "cannot import no_such_module_x"),
        ("missing.yaml", None, "cannot read"),
    ],
)
def test_bad_config_errors_name_the_file_and_the_reason(
    tmp_path: Path, name: str, text: str | None, message: str
) -> None:
    path = tmp_path / name
    if text is not None:
        path.write_text(text)
    with pytest.raises(FilterConfigError) as info:
        FilterConfig.load(path)
    assert info.value.path == path
    assert str(info.value).startswith(f"{path}: ")
    assert message in info.value.reason


def test_cli_writes_all_four_outputs(tmp_path: Path) -> None:
    shards = tmp_path / "rollouts"
    frame = mixed_frame()
    write_shard(_records(frame)[:10], shards)
    write_shard(_records(frame)[10:], shards)
    config = write(
        tmp_path / "filters.yaml", "rules: [no_timeout, verifier_passed, min_turns, structure_valid, dedup]\n"
    )
    out = tmp_path / "filtered"
    run = CliRunner().invoke(app, ["filter", str(shards), "--config", str(config), "--out", str(out)])
    assert run.exit_code == 0, run.output
    assert "filter funnel" in run.output and "structure_valid" in run.output and "kept 8 of 25" in run.output

    kept = pl.read_parquet(out / "kept.parquet")
    assert kept.schema == pl.Schema(ROLLOUT_SCHEMA)
    assert kept.height == 8 and read_rollouts(out / "kept.parquet").height == 8
    removed = pl.read_parquet(out / "removed.parquet")
    assert removed.columns == ["rollout_id", "rule", "reason", "source", "effort"]
    assert removed.height == 17
    doc = json.loads((out / "funnel.json").read_text())
    assert doc["rows_in"] == 25 and doc["rows_out"] == 8
    assert [s["rule"] for s in doc["steps"]] == [
        "no_timeout",
        "verifier_passed",
        "min_turns",
        "structure_valid",
        "dedup",
    ]
    assert sum(s["removed"] for s in doc["steps"]) == 17
    assert {(g["source"], g["effort"]) for g in doc["by_group"]} == {
        (s, e) for s in ("local", "imported") for e in ("low", "medium", "xhigh")
    }
    assert doc["top_reasons"]["min_turns"] == {"reason": "2 turns < 5", "count": 4}
    assert doc["config"]["rules"][0] == {"rule": "no_timeout", "name": None, "drop_errors": True}
    png = (out / "funnel.png").read_bytes()
    assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 5_000

    as_json = CliRunner().invoke(app, ["filter", str(shards), "--out", str(tmp_path / "again"), "--json"])
    assert as_json.exit_code == 0, as_json.output
    summary = json.loads(as_json.output)
    assert summary["rows_out"] == 8 and len(summary["steps"]) == len(FilterConfig().rules)
    assert sorted(p.name for p in (tmp_path / "again").iterdir()) == [
        "funnel.json",
        "funnel.png",
        "kept.parquet",
        "removed.parquet",
    ]


def test_cli_default_out_and_usage_errors(tmp_path: Path) -> None:
    shards = tmp_path / "rollouts"
    write_shard([record()], shards)
    ok = CliRunner().invoke(app, ["filter", str(shards)])
    assert ok.exit_code == 0, ok.output
    assert (tmp_path / "rollouts-filtered" / "kept.parquet").is_file()

    bad = write(tmp_path / "bad.yaml", "rules: [{min_turns: {n: -1}}]\n")
    run = CliRunner().invoke(app, ["filter", str(shards), "--config", str(bad)])
    assert run.exit_code == 2
    assert str(bad) in run.output and "greater than or equal to 0" in run.output

    inside = CliRunner().invoke(app, ["filter", str(shards), "--out", str(shards / "out")])
    assert inside.exit_code == 2 and "must not be inside" in inside.output
    missing = CliRunner().invoke(app, ["filter", str(tmp_path / "nope")])
    assert missing.exit_code == 2 and "no such rollout file or folder" in missing.output
    assert "Example: qaflow filter" in CliRunner().invoke(app, ["filter", "--help"]).output


def _records(frame: pl.DataFrame) -> list[RolloutRecord]:
    from qaflow.models.frame import frame_to_records

    return frame_to_records(frame)


def mutated(rng: random.Random) -> list[dict[str, Any]] | None:
    """A trajectory with 0-3 random edits: moved, copied, dropped or nulled messages, roles, ids, arguments."""
    messages: list[Any] = copy.deepcopy(record(tool_steps=rng.randint(0, 3)).messages)
    if len(messages) > 4 and rng.random() < 0.4:
        messages[2]["tool_calls"].append(
            {"id": "p", "type": "function", "function": {"name": "read", "arguments": "{}"}}
        )
        messages.insert(3, {"role": "tool", "tool_call_id": "p", "content": "r"})
    for _ in range(rng.choice([0, 1, 1, 2, 3])):
        if not messages:
            break
        i = rng.randrange(len(messages))
        m = messages[i] if messages[i] is not None else {}
        calls = m.get("tool_calls") or [{}]
        function = (calls[-1] or {}).get("function") or {}
        edit = rng.randrange(12)
        if edit == 0:
            del messages[i]
        elif edit == 1:
            j = rng.randrange(len(messages))
            messages[i], messages[j] = messages[j], messages[i]
        elif edit == 2:
            messages.insert(i, copy.deepcopy(messages[i]))
        elif edit == 3:
            m["role"] = rng.choice(["bogus", None, "user", "system", "tool", "assistant"])
        elif edit == 4:
            m["tool_call_id"] = rng.choice(["c0", "c1", "p", None, "", "zz"])
        elif edit == 5:
            (calls[0] or {})["id"] = rng.choice(["c0", "c1", "p", None, ""])
        elif edit == 6:
            function["arguments"] = rng.choice(["{", "[]", '{"x": 1}', '{"command": null}', "", None, "null", "{} x"])
        elif edit == 7:
            function["name"] = rng.choice(["python", None, "write", "read"])
        elif edit == 8:
            m.update(content=rng.choice(["", "  ", None]), reasoning_content=None, tool_calls=rng.choice([None, []]))
        elif edit == 9:
            messages.insert(i, {"role": "tool", "tool_call_id": rng.choice(["c0", "c1", "zz"]), "content": "t"})
        elif edit == 10:
            messages[i] = None
        else:
            calls.reverse()
    return messages if rng.random() > 0.02 else None


def test_structure_agrees_with_the_python_loop_on_random_edits() -> None:
    rng = random.Random(7)
    rows = [mutated(rng) for _ in range(3_000)]
    keys = ("role", "content", "reasoning_content", "tool_call_id", "name", "tool_calls")
    messages = [None if ms is None else [None if m is None else {k: m.get(k) for k in keys} for m in ms] for ms in rows]
    frame = pl.DataFrame(
        {"messages": messages, "tools_json": [json.dumps(TOOLS)] * len(rows)},
        schema={"messages": pl.List(MESSAGE_DTYPE), "tools_json": pl.String},
    )
    reasons = structure_reasons(frame).to_list()
    required = {t["function"]["name"]: t["function"]["parameters"]["required"] for t in TOOLS}
    python_ok = [python_structure_ok(row["messages"], required) for row in frame.to_dicts()]
    assert [r is None for r in reasons] == python_ok
    assert 0.3 < python_ok.count(False) / len(rows) < 0.8


EXPECTED_BY_KIND = {
    "agent_timeout": ("no_timeout", r"agent timeout"),
    "verifier_timeout": ("no_timeout", r"verifier timeout"),
    "error": ("no_timeout", r"error: LLMError: provider returned 500"),
    "low_reward": ("verifier_passed", r"reward 0\.0 is not full"),
    "side_call": ("no_side_calls", r"1 side calls \(subagent\)"),
    "repaired": ("clean_text", r"not UTF-8"),
    "few_turns": ("min_turns", r"4 turns < 5"),
    "thinking": ("token_budget", r"50000 thinking tokens > 20000"),
    "completion": ("token_budget", r"\d+ completion tokens > 30000"),
    "huge_output": ("token_budget", r"message 5 has 250000 chars > 200000"),
    "no_result": ("structure_valid", r"tool call call_{i}_2 has no result"),
    "orphan_result": ("structure_valid", r"tool call call_{i}_2 has no result"),
    "bad_json": ("structure_valid", r"arguments of call call_{i}_2 are not valid JSON"),
    "not_object": ("structure_valid", r"arguments of call call_{i}_1 are not a JSON object"),
    "missing_arg": ("structure_valid", r"missing required argument 'command' for bash \(call call_{i}_3\)"),
    "unknown_tool": ("structure_valid", r"call call_{i}_0 uses tool 'python' that is not offered"),
    "dup_call_id": ("structure_valid", r"duplicate tool call id call_{i}_0"),
    "empty_assistant": ("structure_valid", r"empty assistant turn at message 6"),
    "ends_with_tool": ("structure_valid", r"ends with a tool message"),
    "assistant_first": ("structure_valid", r"message 1 is assistant, not user"),
    "late_system": ("structure_valid", r"system message at position 4"),
    "reward_hack": ("reward_hack", r"reward hack: created /app/conftest\.py: a file pytest loads"),
}


def test_bench_rows_break_what_they_say_and_python_agrees() -> None:
    frame = synthetic_frame(2_000, seed=3)
    assert frame.schema == pl.Schema(ROLLOUT_SCHEMA)
    config = bench_config()
    ours = polars_verdict(frame, config)
    baseline = python_filter(frame.to_dicts(), config)
    assert ours == baseline
    kinds = dict(zip(frame["rollout_id"], frame["meta_json"].str.json_path_match("$.bench_kind"), strict=True))
    result = apply_filters(frame, config)
    reasons = dict(zip(result.removed["rollout_id"], result.removed["reason"], strict=True))
    seen = set()
    for rid, kind in kinds.items():
        i = rid[1:]
        if kind in ("ok", "installs"):  # a package install's own .pth is no hack
            assert ours[rid] is None or ours[rid] == "dedup", rid
        elif kind == "duplicate":
            if kinds.get(f"r{int(i) - 1}") == "ok":
                assert (ours[rid], reasons[rid]) == ("dedup", f"duplicate of r{int(i) - 1}")
        else:
            rule, pattern = EXPECTED_BY_KIND[kind]
            assert ours[rid] == rule, (rid, kind, reasons.get(rid))
            assert re.search(pattern.format(i=i), reasons[rid]), (rid, kind, reasons[rid])
        seen.add(kind)
    assert seen == set(EXPECTED_BY_KIND) | {"ok", "duplicate", "installs"}
