"""Fuzzing rollout records, trajectories, filters and exports (issue 11).

Records with random messages (unknown roles, missing and extra tool results, duplicate ids, arguments
that are not JSON or not an object, None content, multi-MB content, lone surrogates, NUL and control
characters, deeply nested arguments), turns, usage and exit statuses. Properties:

- a record is either built or refused with a pydantic ValidationError; `records_to_frame` never raises on a
  built record, keeps one row per record with exactly ROLLOUT_SCHEMA, and the frame survives a parquet
  round trip;
- the default filter set never raises, its funnel adds up (rows_in - removed = rows_out, overall and per
  group) and every removed row has a non-empty reason;
- `export_sft` (on the raw frame and on the filter output) writes a dataset that `load_export` reads back
  with as many rows as it reports kept, the rest removed with a reason, or raises NothingToExport when every
  row was dropped;
- `atif_to_messages` returns or raises AtifError, never KeyError/TypeError/...; what it returns makes a
  valid record; `import_job` on damaged Harbor trials reports each bad trial with a path and a reason.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections import Counter
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from curation.export import GateOptions, NothingToExport, export_sft, load_export
from curation.export.common import RemovalReason
from curation.filters import BUILTIN_RULES, FilterConfig, FilterResult, MinTurns, VerifierPassed, apply_filters
from qaflow.agents.tool_specs import TOOLS
from qaflow.importers.atif import AtifError, atif_to_messages, atif_tools
from qaflow.importers.harbor_jobs import HarborImportError, import_job
from qaflow.models.frame import ROLLOUT_SCHEMA, frame_to_records, read_rollouts, records_to_frame, write_shard
from qaflow.models.rollout import Effort, RolloutRecord, SideCallKind
from qaflow.models.trial import ExitStatus
from tests.trajectories import tool_turns

HARBOR_JOB = Path(__file__).parent / "data" / "harbor_job" / "2026-01-05__10-00-00"


def fuzz(max_examples: int) -> settings:
    return settings(
        max_examples=max_examples,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example],
    )


def deep(depth: int, leaf: Any = 1, *, kind: str = "dict") -> Any:
    for _ in range(depth):
        leaf = {"a": leaf} if kind == "dict" else [leaf]
    return leaf


# --- strategies ------------------------------------------------------------------------------------------


def weighted(*options: tuple[int, st.SearchStrategy[Any]]) -> st.SearchStrategy[Any]:
    """One of the strategies, picked with the given weights. (`st.one_of` weighs its flattened branches
    alike, so a union among the alternatives, like `json_leaf`, would swamp the others.)"""
    total = sum(weight for weight, _ in options)

    def pick(i: int) -> st.SearchStrategy[Any]:
        for weight, strategy in options:
            if i < weight:
                return strategy
            i -= weight
        raise AssertionError(i)  # pragma: no cover

    return st.integers(min_value=0, max_value=total - 1).flatmap(pick)


json_leaf = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(10**30), max_value=10**30), st.floats(), st.text(max_size=8)
)
json_any = st.recursive(
    json_leaf,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=10,
)


def often(strategy: st.SearchStrategy[Any], other: st.SearchStrategy[Any] = json_any) -> st.SearchStrategy[Any]:
    """The strategy, or (one time in five) `other`, by default any JSON value, in its place."""
    return weighted((4, strategy), (1, other))


weird_text = weighted(
    (6, st.text(max_size=30)),
    (2, st.text(st.characters(codec=None, categories=["Cc", "Cs", "Zs", "Co", "Lo", "Mn"]), max_size=12)),
    (2, st.sampled_from(["", " ", "\x00", "a\x00b", "\udc80", "a\ud800b", "\u2028", "\ufeff", "\x1b[31m", "\r\n"])),
)
content = weighted(
    (2, st.none()),
    (6, weird_text),
    (
        1,
        st.lists(
            st.one_of(st.fixed_dictionaries({"type": st.just("text"), "text": weird_text}), json_leaf), max_size=3
        ),
    ),
    (1, json_leaf),
)
arguments = weighted(
    (6, st.dictionaries(st.sampled_from(["command", "path", "x"]), json_leaf, max_size=3).map(json.dumps)),
    (2, st.just('{"command": "ls"}')),
    (1, st.text(max_size=20)),
    (2, st.sampled_from(["[1]", "3", "null", '"s"', "true", "NaN", '{"command": NaN}', "{", "", " {} ", '{"a":1}x'])),
    (1, st.just('{"command": 1' + "0" * 5000 + "}")),
    (1, st.integers(min_value=1, max_value=5000).map(lambda n: '{"a":' * n + "1" + "}" * n)),
    (1, st.integers(min_value=1, max_value=5000).map(lambda n: "[" * n + "]" * n)),
    (1, st.none()),
    (1, st.dictionaries(st.text(max_size=5), json_any, max_size=3)),
    (1, st.integers(min_value=1, max_value=260).map(deep)),
    (1, json_leaf),
)
call_ids = weighted(
    (6, st.sampled_from(["c0", "c1", "c2", "", "\udc80"])), (1, st.none()), (1, st.text(max_size=5)), (1, json_leaf)
)
tool_names = weighted(
    (6, st.sampled_from(["bash", "read", "edit", "write", "nope", ""])), (1, st.none()), (1, weird_text)
)
tool_call = weighted(
    (
        6,
        st.fixed_dictionaries(
            {
                "id": call_ids,
                "type": st.sampled_from(["function", None, "custom"]),
                "function": st.fixed_dictionaries({"name": tool_names, "arguments": arguments}),
            }
        ),
    ),
    (2, st.fixed_dictionaries({"id": call_ids, "function": often(st.fixed_dictionaries({"arguments": arguments}))})),
    (1, json_any),
)
roles = weighted(
    (8, st.sampled_from(["system", "user", "assistant", "tool", "developer", "function", "ASSISTANT", "", "tool "])),
    (1, st.none()),
    (1, weird_text),
    (1, json_leaf),
)
random_message = st.fixed_dictionaries(
    {"role": roles},
    optional={
        "content": content,
        "reasoning_content": st.one_of(st.none(), weird_text),
        "tool_calls": weighted((1, st.none()), (4, st.lists(tool_call, max_size=3)), (1, json_any)),
        "tool_call_id": call_ids,
        "name": st.one_of(weird_text, json_leaf),
        "extra_key": json_any,
    },
)


@st.composite
def mutated_trajectory(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A valid trajectory, then a few random edits: near-valid inputs, so some rows survive to be exported."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Solve it."},
        *tool_turns(draw(st.integers(min_value=0, max_value=6))),
    ]
    if draw(st.booleans()):
        final = draw(weighted((4, st.text(max_size=30)), (1, weird_text)))
        messages.append({"role": "assistant", "content": final or "Done."})
    for _ in range(draw(st.integers(min_value=0, max_value=3))):
        op = draw(st.sampled_from(["drop", "dup", "swap", "role", "args", "id", "insert", "content", "calls"]))
        i = draw(st.integers(min_value=0, max_value=max(0, len(messages) - 1)))
        if not messages and op != "insert":
            continue
        if op == "drop":
            messages.pop(i)
        elif op == "dup":
            messages.insert(i, dict(messages[i]))
        elif op == "swap":
            j = draw(st.integers(min_value=0, max_value=len(messages) - 1))
            messages[i], messages[j] = messages[j], messages[i]
        elif op == "role":
            messages[i] = {**messages[i], "role": draw(roles)}
        elif op == "args" and messages[i].get("tool_calls"):
            call = messages[i]["tool_calls"][0]
            messages[i] = {
                **messages[i],
                "tool_calls": [{**call, "function": {**call["function"], "arguments": draw(arguments)}}],
            }
        elif op == "id":
            key = "tool_calls" if messages[i].get("tool_calls") else "tool_call_id"
            new_id = draw(call_ids)
            if key == "tool_calls":
                messages[i] = {**messages[i], "tool_calls": [{**messages[i]["tool_calls"][0], "id": new_id}]}
            else:
                messages[i] = {**messages[i], "tool_call_id": new_id}
        elif op == "insert":
            messages.insert(i, draw(random_message))
        elif op == "content":
            messages[i] = {**messages[i], "content": draw(content)}
        elif op == "calls":
            messages[i] = {**messages[i], "tool_calls": draw(st.lists(tool_call, max_size=2))}
    return messages


int64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
any_int = weighted(
    (8, st.integers(min_value=0, max_value=50)), (1, int64), (1, st.integers(min_value=-(2**80), max_value=2**80))
)
usage_entry = st.fixed_dictionaries(
    {},
    optional={
        "prompt_tokens": any_int,
        "completion_tokens": any_int,
        "reasoning_tokens": any_int,
        "reasoning_source": st.sampled_from(["provider", "tokenizer", "none", "?"]),
    },
)
side_call = st.fixed_dictionaries(
    {"kind": st.sampled_from([k.value for k in SideCallKind]), "turn": any_int}, optional={"tokens": any_int}
)
timezones = st.sampled_from([None, UTC, timezone(timedelta(hours=14)), timezone(-timedelta(hours=23, minutes=59))])
plain_text = weighted((6, st.text(max_size=30)), (1, weird_text))
record_fields = st.fixed_dictionaries(
    {
        "task": weighted((6, st.just("demo/task")), (2, weird_text)),
        "model": weighted((8, st.just("openai/scripted")), (1, st.just("m")), (1, st.just("\udc80"))),
        "messages": weighted((4, mutated_trajectory()), (1, st.lists(random_message, max_size=6))),
        "exit_status": weighted((6, st.just("ok")), (1, st.sampled_from([s.value for s in ExitStatus]))),
        "effort": st.sampled_from([e.value for e in Effort]),
        "reward": weighted((2, st.none()), (2, st.floats()), (6, st.sampled_from([0.0, 0.5, 1.0]))),
        "full_reward": st.booleans(),
        "turns": any_int,
        "thinking_tokens": any_int,
        "round": st.integers(min_value=0, max_value=3),
        "usage": st.lists(usage_entry, max_size=4),
        "side_calls": weighted((6, st.just([])), (1, st.lists(side_call, max_size=2))),
        "tools": weighted(
            (6, st.just(TOOLS)), (1, st.just([])), (1, st.lists(st.dictionaries(st.text(max_size=4), json_any)))
        ),
        "meta": weighted(
            (6, st.dictionaries(st.text(max_size=6), json_any, max_size=3)), (1, st.just({"d": deep(150)}))
        ),
        "error": st.one_of(st.none(), plain_text),
        "stop_reason": plain_text,
        "verifier_output": plain_text,
        "source": weighted((8, st.just("local")), (1, st.just("harbor:job")), (1, st.just("a\udc80"))),
        "created_at": st.builds(
            lambda dt, tz: dt.replace(tzinfo=tz), st.datetimes(min_value=datetime(1, 1, 2)), timezones
        ),
        "rewards": st.one_of(st.none(), st.dictionaries(st.text(max_size=5), st.floats(), max_size=3)),
        "timings": st.dictionaries(st.text(max_size=5), st.floats(), max_size=3),
    }
)
big_content = weighted((6, st.none()), (1, st.integers(min_value=500_000, max_value=3_000_000)))


def make(fields: dict[str, Any], attempt: int, big: int | None = None) -> RolloutRecord | None:
    """The record, or None when the fields are refused (a ValidationError: a clear error, never another)."""
    fields = dict(fields)
    if big is not None and fields["messages"]:
        messages = list(fields["messages"])
        messages[0] = {**messages[0], "content": "x" * big}
        fields["messages"] = messages
    try:
        return RolloutRecord(task_version=f"v{attempt % 3}", attempt=attempt, **fields)
    except ValidationError as e:
        assert e.errors(), "a ValidationError without errors"
        return None


records_strategy = st.lists(st.tuples(record_fields, big_content), max_size=4).map(
    lambda items: [r for i, (f, big) in enumerate(items) if (r := make(f, i, big)) is not None]
)


def _has_surrogate(value: Any) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if any(0xD800 <= ord(c) <= 0xDFFF for c in item):
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return False


# --- records -> frame ------------------------------------------------------------------------------------


@fuzz(120)
@given(records=records_strategy)
@example(records=[])
def test_records_to_frame(records: list[RolloutRecord]) -> None:
    frame = records_to_frame(records)
    assert frame.height == len(records)
    assert dict(frame.schema) == ROLLOUT_SCHEMA
    assert frame["rollout_id"].to_list() == [r.rollout_id for r in records]
    for row, record in zip(frame.iter_rows(named=True), records, strict=True):
        assert len(row["messages"]) == len(record.messages)
        if row["text_repaired"]:
            assert _has_surrogate(record.model_dump(mode="python")), "text repaired in a record without bad text"
        if not _has_surrogate(record.model_dump(mode="python")):
            assert not row["text_repaired"]
    back = frame_to_records(frame)
    assert len(back) == len(records)
    for again, record, repaired in zip(back, records, frame["text_repaired"].to_list(), strict=True):
        if not repaired:  # repaired text (U+FFFD for lone surrogates) may change the id, as documented
            assert again.rollout_id == record.rollout_id
            assert len(again.messages) == len(record.messages)
    with tempfile.TemporaryDirectory() as d:
        shard = write_shard(records, Path(d))
        read = read_rollouts(Path(d))
        assert (shard is None) == (not records)
        assert read.height == len({r.rollout_id for r in records})
        assert dict(read.schema) == ROLLOUT_SCHEMA


@fuzz(40)
@given(fields=record_fields)
@example(fields={"turns": 2**70})
@example(fields={"usage": [{"prompt_tokens": 2**64}]})
@example(fields={"created_at": datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=5)))})
def test_out_of_range_records_are_refused(fields: dict[str, Any]) -> None:
    """Values the frame cannot hold (ints beyond Int64, nesting JSON cannot round-trip, a time before UTC's
    year 1) are refused when the record is built, so records_to_frame never meets them."""
    base = {"task": "t", "task_version": "v", "model": "m"}
    try:
        record = RolloutRecord(**{**base, **fields})
    except ValidationError as e:
        assert e.errors()
        return
    assert records_to_frame([record]).height == 1


@pytest.mark.parametrize(
    "fields",
    [
        lambda: {
            "messages": [{"role": "assistant", "tool_calls": [{"id": "c", "function": {"arguments": deep(300)}}]}]
        },
        lambda: {"meta": {"k": deep(5000, kind="list")}},
        lambda: {"tools": [{"function": {"name": "f", "parameters": deep(100_000)}}]},
    ],
    ids=["arguments", "meta", "tools"],
)
def test_deeply_nested_records_are_refused(fields: Any) -> None:
    """Nesting deeper than JSON can round-trip is a ValidationError when the record is built (checked without
    recursion, so even nesting past the recursion limit is a clean error)."""
    with pytest.raises(ValidationError, match="nests deeper"):
        RolloutRecord(task="t", task_version="v", model="m", **fields())


# --- filters ---------------------------------------------------------------------------------------------


def check_funnel(frame: pl.DataFrame, result: FilterResult, steps: list[str]) -> None:
    funnel = result.funnel
    assert funnel["rule"].to_list() == steps
    rows_in, removed, rows_out = (funnel[c].to_list() for c in ("rows_in", "removed", "rows_out"))
    assert rows_in[0] == frame.height
    for i in range(len(steps)):
        assert removed[i] >= 0
        assert rows_in[i] - removed[i] == rows_out[i]
        if i:
            assert rows_in[i] == rows_out[i - 1]
    assert rows_out[-1] == result.kept.height
    assert result.removed.height == sum(removed) == frame.height - result.kept.height
    assert dict(result.kept.schema) == ROLLOUT_SCHEMA
    reasons = result.removed["reason"].to_list()
    assert all(isinstance(r, str) and r.strip() for r in reasons), f"a removal without a reason: {reasons}"
    assert set(result.removed["rule"].to_list()) <= set(steps)
    assert Counter(result.kept["rollout_id"].to_list()) + Counter(result.removed["rollout_id"].to_list()) == Counter(
        frame["rollout_id"].to_list()
    )
    by_group = result.funnel_by_group
    for _, group in by_group.group_by("source", "effort"):
        group = group.sort("step")
        g_in, g_removed, g_out = (group[c].to_list() for c in ("rows_in", "removed", "rows_out"))
        for i in range(len(g_in)):
            assert g_in[i] - g_removed[i] == g_out[i] and g_out[i] >= 0
            if i:
                assert g_in[i] == g_out[i - 1]
    firsts = by_group.filter(pl.col("step") == 1)["rows_in"].sum() if by_group.height else 0
    assert firsts == frame.height


LENIENT = FilterConfig(
    rules=[
        *(r() for r in BUILTIN_RULES if r not in (MinTurns, VerifierPassed)),
        MinTurns(n=0),
        VerifierPassed(full_reward=False, min_reward=-1e300),
    ]
)


@fuzz(120)
@given(records=records_strategy)
@example(records=[])
def test_filters(records: list[RolloutRecord]) -> None:
    frame = records_to_frame(records)
    for config in (FilterConfig(), LENIENT):
        result = apply_filters(frame, config)
        check_funnel(frame, result, [r.step for r in config.rules])


# --- export ----------------------------------------------------------------------------------------------


def check_export(frame: pl.DataFrame, out: Path) -> None:
    try:
        report = export_sft(frame, out, sharegpt=True, gate=GateOptions(include_unaccepted=True))
    except NothingToExport as e:
        assert len(e.removed) == frame.height, "NothingToExport while some row was not removed"
        for removed in e.removed:
            assert removed.detail.strip() and removed.reason in RemovalReason
        assert not out.exists() or not any(out.iterdir())
        return
    assert report.rows >= 1
    assert report.rows + len(report.removed) == frame.height
    for removed in report.removed:
        assert removed.detail.strip() and removed.reason in RemovalReason
    ds = load_export(out)["train"]
    assert len(ds) == report.rows
    assert Counter(ds["rollout_id"]) + Counter(r.id for r in report.removed) == Counter(frame["rollout_id"].to_list())
    parquet = sum(pl.read_parquet(p).height for p in sorted((out / "data").glob("*.parquet")))
    assert parquet == report.rows
    sharegpt = sum(pl.read_parquet(p).height for p in sorted((out / "sharegpt").glob("*.parquet")))
    assert sharegpt == report.rows


@fuzz(80)
@given(records=records_strategy)
@example(records=[])
def test_export_sft(records: list[RolloutRecord]) -> None:
    frame = records_to_frame(records)
    kept = apply_filters(frame, LENIENT).kept
    with tempfile.TemporaryDirectory() as d:
        check_export(frame, Path(d) / "raw")
        check_export(kept, Path(d) / "filtered")


def _one_call(arguments: str) -> list[dict[str, Any]]:
    call = {"id": "c0", "type": "function", "function": {"name": "bash", "arguments": arguments}}
    return [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c0", "content": "ok"},
        {"role": "assistant", "content": "done"},
    ]


@pytest.mark.parametrize(
    "arguments",
    [
        "[" * 100_000 + "]" * 100_000,
        '{"a":' * 100_000 + "1" + "}" * 100_000,
        '{"command": ' + "[" * 3000 + "]" * 3000 + "}",
    ],
    ids=["deep-array", "deep-object", "deep-value"],
)
def test_export_deeply_nested_arguments(arguments: str) -> None:
    """Arguments nested past Python's recursion limit: the row is removed with a reason, nothing crashes."""
    frame = records_to_frame([RolloutRecord(task="t", task_version="v", model="m", messages=_one_call(arguments))])
    apply_filters(frame)
    with tempfile.TemporaryDirectory() as d:
        check_export(frame, Path(d) / "out")


# --- ATIF and Harbor import ------------------------------------------------------------------------------


atif_text = st.one_of(
    st.text(max_size=20), st.lists(st.fixed_dictionaries({"type": st.just("text"), "text": json_leaf}))
)
atif_call = often(
    st.fixed_dictionaries(
        {},
        optional={
            "tool_call_id": often(st.sampled_from(["t0", "t1", ""])),
            "function_name": often(st.sampled_from(["bash", "edit", ""])),
            "arguments": often(st.dictionaries(st.text(max_size=5), json_leaf, max_size=3) | st.text(max_size=10)),
        },
    )
)
atif_ref = often(
    st.fixed_dictionaries({}, optional={"trajectory_id": often(st.text(max_size=4)), "trajectory_path": json_any})
)
atif_result = often(
    st.fixed_dictionaries(
        {},
        optional={
            "source_call_id": often(st.sampled_from(["t0", "t1", "x"])),
            "content": often(atif_text),
            "subagent_trajectory_ref": often(st.lists(atif_ref, max_size=2)),
        },
    )
)
atif_metrics = often(
    st.fixed_dictionaries(
        {},
        optional={
            "prompt_tokens": json_leaf,
            "completion_tokens": json_leaf,
            "extra": often(st.fixed_dictionaries({}, optional={"reasoning_tokens": json_leaf})),
        },
    )
)
atif_step = often(
    st.fixed_dictionaries(
        {"source": often(st.sampled_from(["system", "user", "agent", "agent", "agent"]), json_leaf)},
        optional={
            "message": often(atif_text),
            "reasoning_content": often(st.text(max_size=10)),
            "tool_calls": often(st.lists(atif_call, max_size=3)),
            "observation": often(
                st.fixed_dictionaries({}, optional={"results": often(st.lists(atif_result, max_size=3))})
            ),
            "metrics": atif_metrics,
            "extra": often(
                st.fixed_dictionaries(
                    {},
                    optional={
                        "is_sidechain": json_leaf,
                        "context_management": often(
                            st.fixed_dictionaries({"type": st.sampled_from(["compaction", "x"])})
                        ),
                    },
                )
            ),
            "is_copied_context": json_leaf,
            "step_id": json_leaf,
            "reasoning_effort": json_leaf,
        },
    )
)
atif_trajectory = often(
    st.fixed_dictionaries(
        {"steps": often(st.lists(atif_step, max_size=6))},
        optional={
            "schema_version": often(st.sampled_from(["ATIF-v1.2", "ATIF-v1.7", "ATIF-v2.0"])),
            "subagent_trajectories": often(st.lists(often(st.fixed_dictionaries({"trajectory_id": json_leaf})))),
            "agent": often(
                st.fixed_dictionaries(
                    {}, optional={"name": json_leaf, "model_name": json_leaf, "tool_definitions": json_any}
                )
            ),
            "final_metrics": json_any,
            "session_id": json_leaf,
        },
    )
)


def check_atif(trajectory: Any) -> None:
    try:
        messages, usage, side_calls, meta = atif_to_messages(trajectory)
    except AtifError as e:
        assert str(e).strip()
        return
    assert isinstance(meta, dict)
    assert len(usage) == sum(1 for m in messages if m.get("role") == "assistant")
    for message in messages:
        assert message["role"] in ("system", "user", "assistant", "tool")
        assert message.get("content") is None or isinstance(message["content"], str)
        for call in message.get("tool_calls") or []:
            assert isinstance(call["id"], str) and isinstance(call["function"]["arguments"], str)
    tools, _ = atif_tools(trajectory)
    record = RolloutRecord(
        task="t", task_version="v", model="m", messages=messages, usage=usage, side_calls=side_calls, tools=tools
    )
    assert records_to_frame([record]).height == 1


@fuzz(300)
@given(trajectory=atif_trajectory)
@example(trajectory={"steps": [{"source": "agent", "tool_calls": 5}]})
@example(trajectory={"steps": [], "subagent_trajectories": 3})
@example(trajectory={"steps": [{"source": "system", "message": "", "tool_calls": True}]})
@example(trajectory={"steps": [{"source": "agent", "metrics": {"prompt_tokens": float("inf")}}]})
@example(trajectory={"steps": [{"source": "agent", "metrics": {"prompt_tokens": float("nan")}}]})
@example(trajectory={"steps": [{"source": "agent", "metrics": {"prompt_tokens": 1e300}}]})
@example(trajectory={"steps": [{"source": "agent", "observation": {"results": [{"subagent_trajectory_ref": 5}]}}]})
@example(
    trajectory={
        "steps": [
            {"source": "agent", "observation": {"results": [{"subagent_trajectory_ref": [{"trajectory_id": [1]}]}]}}
        ]
    }
)
def test_atif_to_messages(trajectory: Any) -> None:
    check_atif(trajectory)


@pytest.mark.parametrize(
    "trajectory",
    [
        lambda: {"steps": [{"source": "agent", "tool_calls": [{"function_name": "f", "arguments": deep(5000)}]}]},
        lambda: {"steps": [{"source": "user", "message": deep(5000)}]},
        lambda: {"steps": [{"source": "agent", "tool_calls": [{"function_name": "f", "arguments": deep(300)}]}]},
    ],
    ids=["arguments-5000", "message-5000", "arguments-300"],
)
def test_atif_deeply_nested(trajectory: Any) -> None:
    check_atif(trajectory())


_TRIAL_FILES = ["result.json", "agent/trajectory.json", "verifier/reward.txt", "verifier/reward.json"]


@st.composite
def json_edit(draw: st.DrawFn, doc: Any) -> Any:
    """`doc` with the value at one random path replaced by a random JSON value (or the key deleted)."""
    if not isinstance(doc, dict | list) or not doc or draw(st.integers(min_value=0, max_value=4)) == 0:
        return draw(json_any)
    key = draw(st.sampled_from(sorted(doc) if isinstance(doc, dict) else list(range(len(doc)))))
    copy = dict(doc) if isinstance(doc, dict) else list(doc)
    if isinstance(copy, dict) and draw(st.integers(min_value=0, max_value=5)) == 0:
        del copy[key]
    else:
        copy[key] = draw(json_edit(copy[key]))
    return copy


@st.composite
def damaged_trial(draw: st.DrawFn) -> dict[str, bytes | None]:
    """Replacements for some files of a real trial folder: None deletes one."""
    changes: dict[str, bytes | None] = {}
    for name in draw(st.lists(st.sampled_from(_TRIAL_FILES), max_size=3, unique=True)):
        original = HARBOR_JOB / "hello-world__Qw3rTy1" / name
        how = draw(st.sampled_from(["edit", "edit", "edit", "bytes", "delete", "json"]))
        if how == "edit" and original.is_file() and name.endswith(".json"):
            changes[name] = json.dumps(draw(json_edit(json.loads(original.read_text())))).encode()
        elif how == "bytes":
            changes[name] = draw(st.binary(max_size=40))
        elif how == "delete":
            changes[name] = None
        else:
            changes[name] = json.dumps(draw(json_any)).encode()
    return changes


@fuzz(80)
@given(trials=st.lists(damaged_trial(), min_size=1, max_size=3))
@example(
    trials=[
        {},
        {"agent/trajectory.json": b'{"schema_version": "ATIF-v1.7", "steps": [{"source": "agent", "tool_calls": 5}]}'},
    ]
)
@example(trials=[{"agent/trajectory.json": b'{"steps": [{"source": "agent", "metrics": {"prompt_tokens": 1e999}}]}'}])
def test_import_job_damaged_trials(trials: list[dict[str, bytes | None]]) -> None:
    with tempfile.TemporaryDirectory() as d:
        job = Path(d) / "job"
        job.mkdir()
        for index, changes in enumerate(trials):
            trial = job / f"hello-world__T{index}"
            shutil.copytree(HARBOR_JOB / "hello-world__Qw3rTy1", trial)
            for name, data in changes.items():
                target = trial / name
                if data is None:
                    target.unlink(missing_ok=True)
                else:
                    target.parent.mkdir(parents=True, exist_ok=True)
                    target.write_bytes(data)
        try:
            report = import_job(job)
        except HarborImportError as e:
            assert e.reason.strip()
            return
        assert report.trials == len(trials)
        assert len(report.records) + len(report.errors) == len(trials)
        for error in report.errors:
            assert error.reason.strip()
            assert job.resolve() in [error.path.resolve(), *error.path.resolve().parents]
        assert records_to_frame(report.records).height == len(report.records)
