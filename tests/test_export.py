"""`qaflow export`: SFT, RL and task-pool datasets, their guard, cards, chat-template rendering and CLI."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import datasets
import polars as pl
import pytest
import yaml
from typer.testing import CliRunner

from curation.chat_templates import QWEN_TOOL_TEMPLATE
from curation.export import (
    ExportError,
    FunnelStep,
    GateOptions,
    NothingToExport,
    RemovalReason,
    SplitSpec,
    export_rl,
    export_sft,
    export_tasks,
    load_export,
    load_funnel,
    require_hub_token,
    rows_to_task_dir,
    sft_rows,
)
from curation.export.sharegpt import to_sharegpt
from curation.filter_structure import structure_reasons
from qaflow.agents.tool_specs import TOOLS
from qaflow.cli import app
from qaflow.ledger.status import StatusWriter
from qaflow.models.audit import AuditRecord, Verdict
from qaflow.models.frame import records_to_frame, write_shard
from qaflow.models.records import RunKind, VersionStatus
from qaflow.models.rollout import RolloutRecord, normalize_message
from qaflow.pool import Pool
from qaflow.task import Task
from tests.conftest import TASKS_REPO
from tests.taskfactory import write_task
from tests.trajectories import make_record

runner = CliRunner()
OPEN = GateOptions(include_unaccepted=True, include_failed=True)
"""Rollouts of the made-up task versions these tests use are in no pool, and some failed (the format is under
test, not the gate): let them through."""


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def parallel_record() -> RolloutRecord:
    """One assistant turn with two tool calls answered by two tool messages, then a final answer."""
    calls = [
        {"id": "p0", "type": "function", "function": {"name": "read", "arguments": json.dumps({"path": "a.txt"})}},
        {"id": "p1", "type": "function", "function": {"name": "bash", "arguments": json.dumps({"command": "ls"})}},
    ]
    messages = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Solve demo/parallel."},
        {"role": "assistant", "content": "", "reasoning_content": "Two things at once.", "tool_calls": calls},
        {"role": "tool", "tool_call_id": "p0", "content": "1\thello"},
        {"role": "tool", "tool_call_id": "p1", "content": "a.txt\n"},
        {"role": "assistant", "content": "Both done."},
    ]
    return make_record(task="demo/parallel", messages=messages, source="swe-smith", model="openai/other")


def good_records() -> list[RolloutRecord]:
    return [
        make_record(task="demo/a", effort="low", attempt=0),
        make_record(task="demo/a", effort="medium", attempt=1, tool_steps=2),
        make_record(task="demo/b", effort="xhigh", source="nl2bash", reward=0.0),
        parallel_record(),
    ]


def strip_nulls(message: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in message.items() if v is not None}
    if out.get("tool_calls") is not None:
        out["tool_calls"] = [{k: v for k, v in c.items() if v is not None} for c in out["tool_calls"]]
    return out


def objects(message: dict[str, Any]) -> dict[str, Any]:
    """A rollout message as an export holds it: tool-call arguments decoded to objects."""
    calls = message.get("tool_calls")
    if not calls:
        return message
    decoded = [{**c, "function": {**c["function"], "arguments": json.loads(c["function"]["arguments"])}} for c in calls]
    return {**message, "tool_calls": decoded}


def front_matter(card: str) -> dict[str, Any]:
    assert card.startswith("---\n")
    return yaml.safe_load(card.split("---\n")[1])


def test_sft_export_round_trips_through_load_from_disk_and_parquet(tmp_path: Path) -> None:
    records = good_records()
    out = tmp_path / "sft"
    funnel = [FunnelStep(name="structure", kept=6, removed=1), FunnelStep(name="dedup", kept=4, removed=2)]
    report = export_sft(records_to_frame(records), out, funnel=funnel, license="apache-2.0", gate=OPEN)

    assert (report.rows, report.removed) == (4, [])
    ds = load_export(out)["train"]
    assert len(ds) == 4
    assert ds.column_names[:2] == ["messages", "tools"]
    by_id = {row["rollout_id"]: row for row in ds}
    for record in records:
        row = by_id[record.rollout_id]
        assert [strip_nulls(m) for m in row["messages"]] == [objects(normalize_message(m)) for m in record.messages]
        assert row["tools"] == TOOLS
        got = (row["task"], row["source"], row["model"], row["effort"], row["reward"], row["turns"])
        assert got == (record.task, record.source, record.model, record.effort.value, record.reward, record.turns)
        assert (row["thinking_tokens"], row["task_version"]) == (record.thinking_tokens, record.task_version)
    parallel = by_id[records[3].rollout_id]["messages"][2]
    assert [c["function"]["name"] for c in parallel["tool_calls"]] == ["read", "bash"]
    assert parallel["tool_calls"][1]["function"]["arguments"] == {"command": "ls"}
    assert parallel["tool_calls"][0]["function"]["arguments"] == {"path": "a.txt"}

    shards = sorted((out / "data").glob("*.parquet"))
    assert [p.name for p in shards] == ["train-00000-of-00001.parquet"]  # as the Hub names them
    frame = pl.read_parquet(shards)
    assert frame.height == 4 and set(frame["rollout_id"]) == set(by_id)
    tools = frame.select(pl.col("tools").list.eval(pl.element().ext.storage()))["tools"][0].to_list()
    assert [json.loads(t) for t in tools] == TOOLS

    card = (out / "README.md").read_text()
    meta = front_matter(card)
    assert meta["license"] == "apache-2.0"
    assert set(ds["licence"]) == {"apache-2.0"}  # rows without a licence of their own take the dataset's
    assert {c["config_name"]: c["data_files"] for c in meta["configs"]} == {
        "default": [{"split": "train", "path": "data/train-*.parquet"}],
        "sharegpt": [{"split": "train", "path": "sharegpt/train-*.parquet"}],
    }
    digest = report.content_digest
    assert digest and len(digest) == 12
    assert {c["description"] for c in meta["configs"]} == {f"qaflow export, content sha256 {digest}"}
    assert "dataset_info" not in meta  # the parquet files carry the features
    assert "| `train` | 4 | 3 |" in card  # rows and tasks of the one split
    assert "| `local` | 2 |" in card and "| `nl2bash` | 1 |" in card and "| `swe-smith` | 1 |" in card
    assert "| `openai/scripted` | 3 |" in card and "| `xhigh` | 1 |" in card
    assert (
        "| structure | 6 | 1 |" in card and "| dedup | 4 | 2 |" in card and "| export gate and guard | 4 | 0 |" in card
    )
    assert "qaflow 0.1.0" in card and "`data/train-00000-of-00001.parquet`" in card
    saved = json.loads((out / "export_report.json").read_text())
    assert saved["rows"] == 4 and saved["configs"]["sharegpt"] == {"train": "sharegpt/train-*.parquet"}


def test_sharegpt_variant_maps_roles_calls_and_results(tmp_path: Path) -> None:
    out = tmp_path / "sft"
    records = good_records()
    report = export_sft(records_to_frame(records), out, gate=OPEN)
    rows = {r["rollout_id"]: r for r in pl.read_parquet(out / "sharegpt").iter_rows(named=True)}
    assert len(rows) == 4

    simple = rows[records[0].rollout_id]["conversations"]
    assert [t["from"] for t in simple] == ["system", "human"] + ["function_call", "observation"] * 5 + ["gpt"]
    assert (
        simple[2]["value"]
        == '<think>\nI should run step 0\n</think>\n\n{"name": "bash", "arguments": {"command": "echo 0"}}'
    )
    assert simple[3]["value"] == "0\n" and simple[-1]["value"] == "Done."

    parallel = rows[records[3].rollout_id]
    turns = parallel["conversations"]
    assert [t["from"] for t in turns] == ["system", "human", "function_call", "observation", "gpt"]
    calls = json.loads(turns[2]["value"].split("</think>\n\n", 1)[1])
    assert calls == [{"name": "read", "arguments": {"path": "a.txt"}}, {"name": "bash", "arguments": {"command": "ls"}}]
    assert json.loads(turns[3]["value"]) == ["1\thello", "a.txt\n"]
    assert json.loads(parallel["tools"]) == TOOLS

    # 5 + 2 + 5 tool-calling turns carry "step i" text beside their calls; the parallel one has none.
    assert report.notes == [
        "exported with --include-failed: 1 of 4 sessions are attempts the verifier did not pass (no full reward, "
        "or not ended ok); SFT on them teaches failures",
        "1 of 4 rows are attempts without full reward or that did not end ok (timeouts); "
        "was `qaflow filter` run first?",
        "no pool was given: task status, audit verdict and licence columns are null",
        "ShareGPT: the text beside the tool calls of 12 assistant turns has no place and is dropped",
    ]
    assert not (tmp_path / "plain").exists()
    export_sft(records_to_frame(records), tmp_path / "plain", sharegpt=False, gate=OPEN)
    assert not (tmp_path / "plain" / "sharegpt").exists()


def test_to_sharegpt_keeps_final_turn_without_calls() -> None:
    turns, dropped = to_sharegpt([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}])
    assert turns == [{"from": "human", "value": "hi"}, {"from": "gpt", "value": "hello"}] and dropped == 0


def tiny_tokenizer() -> Any:
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"<unk>": 0, "<|im_start|>": 1, "<|im_end|>": 2, "<|endoftext|>": 3, "assistant": 4, "user": 5}
    backend = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    tokenizer.chat_template = QWEN_TOOL_TEMPLATE
    return tokenizer


def test_exported_row_renders_through_qwen_tool_template_with_calls_in_order(tmp_path: Path) -> None:
    records = good_records()
    export_sft(records_to_frame(records), tmp_path / "sft", gate=OPEN)
    ds = load_export(tmp_path / "sft")["train"]
    tokenizer = tiny_tokenizer()
    for record in (records[0], records[3]):
        row = next(r for r in ds if r["rollout_id"] == record.rollout_id)
        text = tokenizer.apply_chat_template(row["messages"], tools=row["tools"], tokenize=False)
        assert isinstance(text, str)
        for tool in TOOLS:
            assert json.dumps(tool, ensure_ascii=False) in text.split("\n</tools>")[0]
        expected = []
        for message in record.messages:
            if message.get("reasoning_content"):
                expected.append(f"<think>\n{message['reasoning_content']}\n</think>")
            for call in message.get("tool_calls") or []:
                fn = call["function"]
                expected.append(
                    f'<tool_call>\n{{"name": "{fn["name"]}", "arguments": {fn["arguments"]}}}\n</tool_call>'
                )
            if message["role"] == "tool":
                expected.append(f"<tool_response>\n{message['content']}\n</tool_response>")
        assert len(expected) >= 3
        position = text.index("\n</tools>")
        for snippet in expected:
            found = text.find(snippet, position)
            assert found > position, f"{snippet!r} missing or out of order"
            position = found
        assert text.rstrip().endswith(f"{record.messages[-1]['content']}<|im_end|>")

    masked = tokenizer.apply_chat_template(
        ds[0]["messages"], tools=ds[0]["tools"], return_dict=True, return_assistant_tokens_mask=True
    )
    assert 0 < sum(masked["assistant_masks"]) < len(masked["input_ids"])


def test_bad_rows_are_removed_with_reasons_and_good_rows_exported(tmp_path: Path) -> None:
    broken = make_record(
        task="bad/orphan",
        messages=[
            {"role": "system", "content": "s"},
            {"role": "user", "content": "u"},
            {"role": "tool", "tool_call_id": "nobody", "content": "result without a call"},
            {"role": "assistant", "content": "ok"},
        ],
    )
    huge_messages = make_record(task="bad/huge").messages
    huge_messages[3] = {**huge_messages[3], "content": "x" * 5_000_000}
    huge = make_record(task="bad/huge", messages=huge_messages)
    surrogate = make_record(task="bad/bytes", final="caf\udcff")
    frame = records_to_frame([*good_records(), broken, huge, surrogate])
    assert frame.filter(pl.col("task") == "bad/bytes")["text_repaired"].to_list() == [True]

    report = export_sft(frame, tmp_path / "sft", gate=OPEN)

    assert report.rows == 4
    assert {r.task: r.reason for r in report.removed} == {
        "bad/orphan": RemovalReason.ORPHAN_TOOL_RESULT,
        "bad/huge": RemovalReason.MESSAGE_TOO_LARGE,
        "bad/bytes": RemovalReason.TEXT_REPAIRED,
    }
    assert next(r for r in report.removed if r.task == "bad/huge").detail == (
        "message 3 (tool) has 5000000 characters, over the cap of 1000000"
    )
    assert {r["task"] for r in load_export(tmp_path / "sft")["train"]} == {"demo/a", "demo/b", "demo/parallel"}
    saved = json.loads((tmp_path / "sft" / "export_report.json").read_text())
    assert saved["removed_by_reason"] == {"message_too_large": 1, "orphan_tool_result": 1, "text_repaired": 1}
    assert {r["id"] for r in saved["removed"]} == {broken.rollout_id, huge.rollout_id, surrogate.rollout_id}
    assert "| `message_too_large` | 1 |" in (tmp_path / "sft" / "README.md").read_text()

    kept = export_sft(
        records_to_frame([huge]), tmp_path / "big", max_message_chars=6_000_000, sharegpt=False, gate=OPEN
    )
    assert (kept.rows, kept.removed) == (1, [])


def _call(call_id: str, name: str = "bash", arguments: str = '{"command": "ls"}') -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def _turns(*messages: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}, *messages]


def _assistant(*calls: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": "", "tool_calls": list(calls)}


def _answered(*calls: dict[str, Any]) -> list[dict[str, Any]]:
    """An assistant turn with `calls`, a result for each, and a final answer."""
    results = [{"role": "tool", "tool_call_id": c["id"], "content": "ok"} for c in calls]
    return [_assistant(*calls), *results, {"role": "assistant", "content": "done"}]


GUARD_CASES: dict[str, tuple[dict[str, Any], RemovalReason]] = {
    "unknown role": (
        {"messages": _turns({"role": "robot", "content": "beep"}, {"role": "assistant", "content": "done"})},
        RemovalReason.BAD_ROLE,
    ),
    "assistant first": (
        {"messages": [{"role": "assistant", "content": "hi"}, {"role": "user", "content": "u"}]},
        RemovalReason.BAD_ORDER,
    ),
    "call left unanswered": (
        {"messages": _turns(_assistant(_call("c0")), {"role": "user", "content": "and?"})},
        RemovalReason.UNANSWERED_TOOL_CALL,
    ),
    "last turn leaves its call open": (
        {"messages": _turns(_assistant(_call("c0")))},
        RemovalReason.UNANSWERED_TOOL_CALL,
    ),
    "ends with a tool result": ({"messages": _turns(*_answered(_call("c0"))[:-1])}, RemovalReason.UNFINISHED),
    "empty assistant turn": (
        {"messages": _turns({"role": "assistant", "content": " "}, {"role": "user", "content": "go on"}, *_answered())},
        RemovalReason.EMPTY_TURN,
    ),
    "arguments not JSON": (
        {"messages": _turns(*_answered(_call("c0", arguments="{oops")))},
        RemovalReason.BAD_TOOL_CALL,
    ),
    "arguments a list": ({"messages": _turns(*_answered(_call("c0", arguments="[1]")))}, RemovalReason.BAD_TOOL_CALL),
    "call without id": ({"messages": _turns(*_answered(_call("")))}, RemovalReason.BAD_TOOL_CALL),
    "duplicate ids": ({"messages": _turns(*_answered(_call("c0"), _call("c0")))}, RemovalReason.BAD_TOOL_CALL),
    "result answers no call": (
        {
            "messages": _turns(
                *_answered(_call("c0"))[:2], {"role": "tool", "tool_call_id": "c9", "content": "?"}, *_answered()
            )
        },
        RemovalReason.ORPHAN_TOOL_RESULT,
    ),
    "no assistant turn": ({"messages": _turns()}, RemovalReason.NO_ASSISTANT_TURN),
    "no messages": ({"messages": []}, RemovalReason.NO_MESSAGES),
    "tool without name": ({"tools": [{"type": "function", "function": {}}]}, RemovalReason.BAD_TOOLS),
}


@pytest.mark.parametrize("case", sorted(GUARD_CASES))
def test_guard_reasons(case: str, tmp_path: Path) -> None:
    fields, reason = GUARD_CASES[case]
    bad = make_record(task="bad/case", **fields)
    report = export_sft(records_to_frame([make_record(), bad]), tmp_path / "sft", sharegpt=False, gate=OPEN)
    assert report.rows == 1
    assert [(r.id, r.reason) for r in report.removed] == [(bad.rollout_id, reason)]


def test_the_export_and_the_filter_judge_a_session_alike(tmp_path: Path) -> None:
    """One rule set: over sessions made by every single edit of sound ones (drop, duplicate or move a
    message, drop a call's id, empty a turn, cut the end), a row exports exactly when the filter's
    `structure_valid` rule keeps it, and the export's reason is the filter's first problem."""
    sound = [
        _turns(*_answered(_call("c0"))),
        _turns(*_answered(_call("a"), _call("b")), {"role": "user", "content": "more"}, *_answered(_call("c"))),
    ]
    sessions: list[list[dict[str, Any]]] = [*sound]
    for messages in sound:
        for i in range(len(messages)):
            sessions.append(messages[:i] + messages[i + 1 :])
            sessions.append(messages[: i + 1] + messages[i:])
            sessions.append(messages[:i])
            if i + 1 < len(messages):
                sessions.append([*messages[:i], messages[i + 1], messages[i], *messages[i + 2 :]])
            calls = messages[i].get("tool_calls")
            if calls:
                sessions.append([*messages[:i], {**messages[i], "tool_calls": [{**calls[0], "id": ""}, *calls[1:]]}])
                sessions[-1] += messages[i + 1 :]
            if messages[i]["role"] == "assistant":
                sessions.append([*messages[:i], {"role": "assistant", "content": ""}, *messages[i + 1 :]])
    records = [make_record(task=f"edit/{k}", messages=m) for k, m in enumerate(sessions)]
    frame = records_to_frame(records)
    reasons = structure_reasons(frame).to_list()
    assert 10 < sum(r is not None for r in reasons) < len(records)  # both outcomes are exercised
    rows, removed = sft_rows(frame, gate=OPEN)
    by_id = {r.id: r.detail for r in removed}
    for record, reason in zip(records, reasons, strict=True):
        assert by_id.get(record.rollout_id) == reason, (record.messages, reason)
    assert len(rows) == sum(r is None for r in reasons)


def test_all_rows_removed_is_an_error_listing_them(tmp_path: Path) -> None:
    frame = records_to_frame([make_record(final="\udcff")])
    with pytest.raises(NothingToExport) as caught:
        export_sft(frame, tmp_path / "sft", gate=OPEN)
    assert [r.reason for r in caught.value.removed] == [RemovalReason.TEXT_REPAIRED]
    assert not (tmp_path / "sft").exists()
    with pytest.raises(ExportError, match="missing columns"):
        export_sft(frame.drop("messages"), tmp_path / "sft", gate=OPEN)


def test_existing_output_needs_overwrite(tmp_path: Path) -> None:
    out = tmp_path / "sft"
    out.mkdir()
    (out / "stale.txt").write_text("old")
    frame = records_to_frame([make_record()])
    with pytest.raises(ExportError, match="not empty"):
        export_sft(frame, out, gate=OPEN)
    export_sft(frame, out, overwrite=True, gate=OPEN)
    assert not (out / "stale.txt").exists() and len(load_export(out)["train"]) == 1
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]


def test_rl_export_from_rollouts_groups_and_counts_per_effort(tmp_path: Path) -> None:
    records = [
        make_record(task="demo/a", effort="low", attempt=0, thinking_tokens=100),
        make_record(task="demo/a", effort="low", attempt=1, thinking_tokens=300),
        make_record(task="demo/a", effort="low", attempt=2, thinking_tokens=900, reward=0.0),
        make_record(task="demo/a", effort="medium", attempt=0, thinking_tokens=50),
        make_record(task="demo/a", effort="medium", attempt=1, thinking_tokens=70, exit_status="agent_timeout"),
        make_record(task="demo/b", effort="off", attempt=0, reward=0.0, round=1, source="nl2bash"),
        make_record(task="demo/b", effort="off", attempt=0, reward=0.0, round=2, source="nl2bash"),
        make_record(
            task="demo/b",
            effort="off",
            attempt=1,
            reward=0.0,
            round=2,
            source="nl2bash",
            messages=[{"role": "user", "content": "A rare prompt."}, {"role": "assistant", "content": "no"}],
        ),
    ]
    report = export_rl(records_to_frame(records), tmp_path / "rl", gate=OPEN)

    assert (report.rows, report.removed) == (2, [])
    rows = {r["task"]: r for r in load_export(tmp_path / "rl")["train"]}
    a, b = rows["demo/a"], rows["demo/b"]
    assert (a["task_version"], a["source"], a["round"]) == ("v-demo-a", "local", 0)
    assert (b["task_version"], b["source"], b["round"]) == ("v-demo-b", "nl2bash", 2)
    assert (a["attempts"], a["passes"], a["pass_rate"]) == (5, 3, 0.6)
    assert a["efforts"] == [
        {"effort": "low", "attempts": 3, "passes": 2, "pass_rate": 2 / 3, "median_thinking_tokens": 200.0},
        {"effort": "medium", "attempts": 2, "passes": 1, "pass_rate": 0.5, "median_thinking_tokens": 50.0},
    ]
    assert b["efforts"] == [
        {"effort": "off", "attempts": 3, "passes": 0, "pass_rate": 0.0, "median_thinking_tokens": None}
    ]
    assert [(m["role"], m["content"]) for m in a["prompt"]] == [
        ("system", "You are a coding agent."),
        ("user", "Solve demo/a."),
    ]
    assert b["instruction"] == "Solve demo/b." and a["tools"] == TOOLS
    assert report.counts["effort (attempts)"] == {"off": 3, "low": 3, "medium": 2}
    assert "| `task_version` | `string` |" in (tmp_path / "rl" / "README.md").read_text()


def make_pool(root: Path) -> Path:
    """A pool of two written tasks and two real ones from tasks_repo, scanned, with three accepted."""
    pool_dir = root / "pool"
    alpha = write_task(pool_dir, "alpha", files={"environment/data.bin": ""})
    (alpha / "environment" / "data.bin").write_bytes(bytes(range(256)) * 4)
    (alpha / "solution" / "solve.sh").chmod(0o755)
    (alpha / "environment" / "link.txt").symlink_to("Dockerfile")
    write_task(pool_dir, "beta", instruction="Beta: write `done`.\n")
    for name in ("csv-sum", "fix-slugify"):
        shutil.copytree(TASKS_REPO / name, pool_dir / "real" / name, symlinks=True)
    with Pool.open(pool_dir) as pool:
        report = pool.scan()
        assert report.invalid == 0, report.summary()
        for entry in report.entries:
            if not entry.path.endswith("beta"):
                pool.ledger.set_status(entry.version, VersionStatus.ACCEPTED, by=StatusWriter.AUDIT, reason="test")
    return pool_dir


def versions(pool_dir: Path) -> dict[str, str]:
    with Pool.open(pool_dir, create=False) as pool:
        return {row.path: row.version for row in pool.list()}


def test_rl_export_from_pool_with_and_without_rollouts(tmp_path: Path) -> None:
    pool_dir = make_pool(tmp_path)
    alpha = versions(pool_dir)["alpha"]

    report = export_rl(pool_dir, tmp_path / "rl", system_prompt="Be brief.")
    rows = {r["task"]: r for r in load_export(tmp_path / "rl")["train"]}
    assert report.rows == 3 and "test/beta" not in rows
    row = rows["test/alpha"]
    assert [(m["role"], m["content"]) for m in row["prompt"]] == [
        ("system", "Be brief."),
        ("user", "Write `done` to /app/out.txt.\n"),
    ]
    assert (row["task_version"], row["round"], row["attempts"], row["pass_rate"], row["efforts"]) == (
        alpha,
        0,
        0,
        None,
        [],
    )
    assert row["tools"] == TOOLS

    rollouts = records_to_frame(
        [
            make_record(task="test/alpha", task_version=alpha, effort="low", attempt=0, thinking_tokens=40),
            make_record(task="test/alpha", task_version=alpha, effort="low", attempt=1, reward=0.0),
        ]
    )
    export_rl(pool_dir, tmp_path / "rl2", rollouts=rollouts, status=None)
    rows = {r["task"]: r for r in load_export(tmp_path / "rl2")["train"]}
    assert len(rows) == 4
    row = rows["test/alpha"]
    assert (row["attempts"], row["passes"], row["pass_rate"]) == (2, 1, 0.5)
    assert row["efforts"][0]["median_thinking_tokens"] == 40.0
    assert row["prompt"][1]["content"] == "Solve test/alpha."
    assert rows["test/beta"]["prompt"][0]["content"] == "Beta: write `done`.\n"

    (pool_dir / "alpha" / "instruction.md").write_text("Changed after the scan.\n")
    report = export_rl(pool_dir, tmp_path / "rl3")
    assert report.rows == 2
    assert [(r.task, r.reason) for r in report.removed] == [("test/alpha", RemovalReason.CHANGED_SINCE_SCAN)]


def test_tasks_export_rebuilds_the_same_versions(tmp_path: Path) -> None:
    pool_dir = make_pool(tmp_path)
    known = versions(pool_dir)

    report = export_tasks(pool_dir, tmp_path / "tasks")
    assert report.rows == 3 and report.removed == [] and report.counts["status"] == {"accepted": 3}
    ds = load_export(tmp_path / "tasks")["train"]
    assert sorted(ds["path"]) == ["alpha", "real/csv-sum", "real/fix-slugify"]
    for row in ds:
        assert row["complete"] and row["skipped"] == []
        assert row["version"] == known[row["path"]]
        rebuilt = rows_to_task_dir(row, tmp_path / "rebuilt" / row["path"])
        task = Task.load(rebuilt)
        assert task.version == row["version"]
        assert task.instruction == row["instruction"]
        assert row["task_toml"] == (pool_dir / row["path"] / "task.toml").read_text()
        assert row["dockerfile"] == (pool_dir / row["path"] / "environment" / "Dockerfile").read_text()

    alpha = next(r for r in ds if r["path"] == "alpha")
    files = {f["path"]: f for f in alpha["files"]}
    data = files["environment/data.bin"]
    assert (data["is_text"], data["content"], data["content_bytes"]) == (False, None, bytes(range(256)) * 4)
    assert (files["environment/link.txt"]["kind"], files["environment/link.txt"]["content"]) == (
        "symlink",
        "Dockerfile",
    )
    rebuilt = tmp_path / "rebuilt" / "alpha"
    assert os.readlink(rebuilt / "environment" / "link.txt") == "Dockerfile"
    assert os.stat(rebuilt / "solution" / "solve.sh").st_mode & 0o777 == 0o755

    unsafe = {**alpha, "files": [*alpha["files"], {**files["task.toml"], "path": "../escape.txt"}]}
    with pytest.raises(ExportError, match="unsafe path"):
        rows_to_task_dir(unsafe, tmp_path / "unsafe")
    assert not (tmp_path / "escape.txt").exists()


def test_tasks_export_caps_file_size_and_marks_rows_incomplete(tmp_path: Path) -> None:
    pool_dir = make_pool(tmp_path)
    report = export_tasks(pool_dir, tmp_path / "tasks", status=["new"], max_file_bytes=120)
    assert report.rows == 1
    row = load_export(tmp_path / "tasks")["train"][0]
    assert row["name"] == "test/beta" and row["status"] == "new"
    assert [s["path"] for s in row["skipped"]] == ["tests/test.sh"]
    assert row["skipped"][0]["reason"] == "over the 120-byte cap" and not row["complete"]
    with pytest.raises(ExportError, match=r"incomplete \(skipped: tests/test.sh\)"):
        rows_to_task_dir(row, tmp_path / "rebuilt")
    rebuilt = rows_to_task_dir(row, tmp_path / "rebuilt", allow_incomplete=True)
    assert not (rebuilt / "tests" / "test.sh").exists() and (rebuilt / "instruction.md").is_file()


def test_tasks_export_without_ledger_or_matches_is_an_error(tmp_path: Path) -> None:
    write_task(tmp_path / "unscanned", "t")
    with pytest.raises(ExportError, match="pool scan"):
        export_tasks(tmp_path / "unscanned", tmp_path / "out")
    pool_dir = make_pool(tmp_path)
    with pytest.raises(NothingToExport, match="has status retired"):
        export_tasks(pool_dir, tmp_path / "out", status=["retired"])
    with pytest.raises(ExportError, match="unknown status"):
        export_tasks(pool_dir, tmp_path / "out", status=["bogus"])


def test_load_funnel_accepts_lists_and_mappings(tmp_path: Path) -> None:
    path = tmp_path / "funnel.json"
    path.write_text(json.dumps([{"step": "input", "rows": 10}, {"name": "dedup", "kept": 8, "dropped": 2}]))
    assert load_funnel(path) == [FunnelStep(name="input", kept=10), FunnelStep(name="dedup", kept=8, removed=2)]
    path.write_text(json.dumps({"funnel": {"input": 10, "dedup": 8}}))
    assert [s.kept for s in load_funnel(path)] == [10, 8]
    summary = {  # what curation.filters.FilterResult.summary() gives
        "rows_in": 10,
        "rows_out": 7,
        "steps": [
            {"step": 1, "rule": "structure", "rows_in": 10, "removed": 2, "rows_out": 8},
            {"step": 2, "rule": "dedup", "rows_in": 8, "removed": 1, "rows_out": 7},
        ],
        "by_group": [],
    }
    path.write_text(json.dumps(summary))
    assert load_funnel(path) == [
        FunnelStep(name="input", kept=10),
        FunnelStep(name="structure", kept=8, removed=2),
        FunnelStep(name="dedup", kept=7, removed=1),
    ]
    path.write_text('"nope"')
    with pytest.raises(ExportError, match="not a funnel"):
        load_funnel(path)


def plain(output: str) -> str:
    return " ".join(output.split())


def test_cli_export_sft(tmp_path: Path) -> None:
    shards = tmp_path / "rollouts"
    write_shard([*good_records(), make_record(task="bad/bytes", final="\udcff")], shards)
    funnel = tmp_path / "funnel.json"
    funnel.write_text(json.dumps([{"name": "turns>=2", "kept": 5, "removed": 1}]))
    out = tmp_path / "sft"

    result = runner.invoke(
        app, ["export", "sft", str(shards), "--out", str(out), "--funnel", str(funnel), "--include-unaccepted"]
    )
    assert result.exit_code == 0, result.output
    text = plain(result.output)
    assert f"sft: 3 rows written to {out} (2 removed: not_passed 1, text_repaired 1)" in text
    assert "removed text_repaired: bad/bytes" in text
    card = (out / "README.md").read_text()
    assert "| turns>=2 | 5 | 1 |" in card and "| export gate and guard | 3 | 2 |" in card
    assert f"- input: `{shards.resolve()}`" in card
    assert len(load_export(out)["train"]) == 3

    again = runner.invoke(app, ["export", "sft", str(shards), "--out", str(out), "--include-unaccepted"])
    assert again.exit_code == 2 and "not empty" in plain(again.output)
    forced = runner.invoke(
        app,
        ["export", "sft", str(shards), "--out", str(out), "--force", "--no-sharegpt", "--json", "--include-unaccepted",
         "--include-failed", "--no-filter"],
    )  # fmt: skip
    assert forced.exit_code == 0, forced.output
    data = json.loads(forced.stdout)
    assert (data["rows"], data["removed_by_reason"]) == (4, {"text_repaired": 1})
    assert not (out / "sharegpt").exists()

    missing = runner.invoke(app, ["export", "sft", str(tmp_path / "nowhere"), "--out", str(tmp_path / "x")])
    assert missing.exit_code == 2
    assert f"{tmp_path / 'nowhere'}: no such file or folder" in plain(missing.output)
    (tmp_path / "junk.parquet").write_text("not parquet")
    junk = runner.invoke(app, ["export", "sft", str(tmp_path / "junk.parquet"), "--out", str(tmp_path / "x")])
    assert junk.exit_code == 2 and "junk.parquet: cannot read rollouts" in plain(junk.output)

    bad_only = tmp_path / "bad-only"
    write_shard([make_record(final="\udcff")], bad_only)
    empty = runner.invoke(app, ["export", "sft", str(bad_only), "--out", str(tmp_path / "y"), "--include-unaccepted"])
    assert empty.exit_code == 1 and "nothing to export" in plain(empty.output)


def test_cli_export_rl_and_tasks(tmp_path: Path) -> None:
    shards = tmp_path / "rollouts"
    write_shard(good_records(), shards)
    result = runner.invoke(app, ["export", "rl", str(shards), "--out", str(tmp_path / "rl"), "--include-unaccepted"])
    assert result.exit_code == 0, result.output
    assert f"rl: 3 rows written to {tmp_path / 'rl'}" in plain(result.output)

    pool_dir = make_pool(tmp_path)
    result = runner.invoke(
        app,
        ["export", "rl", str(pool_dir), "--rollouts", str(shards), "--status", "all", "--out", str(tmp_path / "rl2")],
    )
    assert result.exit_code == 0, result.output
    assert len(load_export(tmp_path / "rl2")["train"]) == 4

    unscanned = tmp_path / "unscanned"
    write_task(unscanned, "t")
    result = runner.invoke(app, ["export", "rl", str(unscanned), "--out", str(tmp_path / "rl3")])
    assert result.exit_code == 2 and "run `qaflow pool scan" in plain(result.output)

    result = runner.invoke(
        app, ["export", "tasks", str(pool_dir), "--status", "accepted,new", "--out", str(tmp_path / "tasks"), "--json"]
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["rows"] == 4 and data["counts"]["status"] == {"accepted": 3, "new": 1}

    result = runner.invoke(app, ["export", "tasks", str(pool_dir), "--status", "bogus", "--out", str(tmp_path / "t2")])
    assert result.exit_code == 2 and "unknown status ['bogus']" in plain(result.output)
    result = runner.invoke(app, ["export", "tasks", str(tmp_path / "nope"), "--out", str(tmp_path / "t3")])
    assert result.exit_code == 2 and f"{tmp_path / 'nope'}: no such pool folder" in plain(result.output)

    for command in ("sft", "rl", "tasks"):
        help_text = runner.invoke(app, ["export", command, "--help"]).output
        assert "Example: qaflow export " + command in plain(help_text)


def test_push_without_token_errors_clearly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import huggingface_hub.constants

    for var in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_OIDC_RESOURCE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(huggingface_hub.constants, "HF_TOKEN_PATH", str(tmp_path / "no-token"))
    with pytest.raises(ExportError, match="no Hugging Face token"):
        require_hub_token("me/data")

    shards = tmp_path / "rollouts"
    write_shard([make_record()], shards)
    out = tmp_path / "sft"
    result = runner.invoke(app, ["export", "sft", str(shards), "--out", str(out), "--push", "me/data"])
    assert result.exit_code == 2
    assert "me/data: cannot push: no Hugging Face token (set HF_TOKEN or run `hf auth login`)" in plain(result.output)
    assert not out.exists()


def test_sft_export_from_a_pool_keeps_only_accepted_graded_model_rows_split_by_task(tmp_path: Path) -> None:
    pool_dir = make_pool(tmp_path)
    known = versions(pool_dir)
    with Pool.open(pool_dir, create=False) as pool:
        names = {row.path: row.name for row in pool.list()}
        csv = known["real/csv-sum"]
        audit_run = pool.ledger.start_run(RunKind.AUDIT).run_id
        first_run = pool.ledger.start_run(RunKind.AUDIT).run_id
        pool.ledger.record_audit(
            AuditRecord(task_version=csv, run_id=first_run, verdict=Verdict.NEEDS_REPAIR, codes=["false_pass"])
        )
        pool.ledger.record_audit(AuditRecord(task_version=csv, run_id=audit_run, verdict=Verdict.ACCEPTED))

    def on(path: str, **fields: Any) -> RolloutRecord:
        return make_record(task=names[path], task_version=known[path], **fields)

    kept = [on("alpha", attempt=0), on("real/csv-sum"), on("real/fix-slugify")]
    left_out = {
        on("alpha", attempt=1, reward=0.0).rollout_id: RemovalReason.NOT_PASSED,  # SFT learns from passes only
        on("beta").rollout_id: RemovalReason.TASK_NOT_ACCEPTED,
        make_record(task="elsewhere/x").rollout_id: RemovalReason.UNKNOWN_TASK_VERSION,
        on("alpha", attempt=2, exit_status="error", error="sandbox: docker died").rollout_id: RemovalReason.NOT_GRADED,
        on("alpha", attempt=3, reward=None, exit_status="agent_timeout").rollout_id: RemovalReason.NOT_GRADED,
        on("alpha", attempt=6, reward=0.0, stop_reason="llm_error").rollout_id: RemovalReason.NOT_GRADED,
        on("alpha", attempt=4, meta={"scripted": True}).rollout_id: RemovalReason.SCRIPTED,
        on("alpha", attempt=5, model="openai/replay-oracle").rollout_id: RemovalReason.SCRIPTED,
    }
    records = [
        *kept,
        on("alpha", attempt=1, reward=0.0),
        on("beta"),
        make_record(task="elsewhere/x"),
        on("alpha", attempt=2, exit_status="error", error="sandbox: docker died"),
        on("alpha", attempt=3, reward=None, exit_status="agent_timeout"),
        on("alpha", attempt=6, reward=0.0, stop_reason="llm_error"),
        on("alpha", attempt=4, meta={"scripted": True}),
        on("alpha", attempt=5, model="openai/replay-oracle"),
    ]
    out = tmp_path / "sft"
    licences = {known["alpha"]: "MIT"}
    report = export_sft(
        records_to_frame(records), out, pool=pool_dir, licences=licences, split=SplitSpec(test_fraction=0.34)
    )

    assert {r.id: r.reason for r in report.removed} == left_out
    assert report.rows == 3 and sum(report.splits.values()) == 3
    loaded = datasets.load_dataset(str(out), cache_dir=str(tmp_path / "hf-cache"))
    assert set(loaded) == {"train", "test"}
    train_tasks, test_tasks = set(loaded["train"]["task"]), set(loaded["test"]["task"])
    assert train_tasks and test_tasks and not train_tasks & test_tasks
    assert train_tasks | test_tasks == {names["alpha"], names["real/csv-sum"], names["real/fix-slugify"]}
    rows = {r["rollout_id"]: r for split in loaded.values() for r in split}
    csv = rows[kept[1].rollout_id]
    assert (csv["task_status"], csv["audit_verdict"], csv["audit_run"]) == ("accepted", "clean", audit_run)
    alpha = rows[kept[0].rollout_id]
    assert (alpha["licence"], alpha["task_status"], alpha["audit_verdict"]) == ("mit", "accepted", None)
    sharegpt = datasets.load_dataset(str(out), "sharegpt", cache_dir=str(tmp_path / "hf-cache"))
    assert {s: len(d) for s, d in sharegpt.items()} == report.splits
    card = (out / "README.md").read_text()
    assert front_matter(card)["license"] == "mit"
    assert "| `clean` | 1 |" in card and "| `mit` | 1 |" in card
    assert "| `not_graded` | 3 |" in card and "| `scripted` | 2 |" in card and "| `not_passed` | 1 |" in card
    assert "without full reward" not in card
    with_failed = export_sft(
        records_to_frame(records), tmp_path / "with-failed", pool=pool_dir, gate=GateOptions(include_failed=True)
    )
    assert with_failed.rows == 4 and RemovalReason.NOT_PASSED not in {r.reason for r in with_failed.removed}
    failed_card = (tmp_path / "with-failed" / "README.md").read_text()
    assert "1 of 4 rows are attempts without full reward" in failed_card
    assert "exported with --include-failed: 1 of 4 sessions are attempts the verifier did not pass" in failed_card

    again = export_sft(
        records_to_frame(records), tmp_path / "again", pool=pool_dir, split=SplitSpec(test_fraction=0.34)
    )
    assert again.splits == report.splits  # the same tasks are held out each time
    with pytest.raises(ExportError, match="--include-unaccepted"):
        export_sft(records_to_frame(records), tmp_path / "nopool")
    everything = export_sft(
        records_to_frame(records),
        tmp_path / "all",
        pool=pool_dir,
        gate=GateOptions(include_unaccepted=True, include_ungraded=True, include_scripted=True, include_failed=True),
    )
    assert (everything.rows, everything.removed) == (len(records), [])


def test_split_spec_holds_out_whole_tasks() -> None:
    tasks = [f"t{i}" for i in range(20)]
    held = SplitSpec(test_fraction=0.2, seed=1).test_set(tasks)
    assert len(held) == 4 and held == SplitSpec(test_fraction=0.2, seed=1).test_set(list(reversed(tasks)))
    assert held != SplitSpec(test_fraction=0.2, seed=2).test_set(tasks)
    assert SplitSpec(test_fraction=0.01).test_set(tasks) and len(SplitSpec(test_fraction=0.9).test_set(["a", "b"])) == 1
    assert SplitSpec(test_fraction=0.5).test_set(["only"]) == set()
    assert SplitSpec(test_tasks=frozenset({"t1", "zz"})).test_set(tasks) == {"t1"}


def test_tasks_export_is_a_source_that_gives_back_the_same_versions(tmp_path: Path) -> None:
    from curation.sources import SourcesConfig, collect_tasks

    pool_dir = make_pool(tmp_path)
    known = versions(pool_dir)
    export_tasks(pool_dir, tmp_path / "tasks", split=SplitSpec(test_fraction=0.34), licences={known["alpha"]: "MIT"})
    config = tmp_path / "sources.yaml"
    config.write_text(
        "sources:\n  - {kind: tasks_export, name: mine, path: tasks, out_dir: rebuilt, licence: CC-BY-4.0}\n"
    )
    result = collect_tasks(SourcesConfig.load(config).sources)
    frame = result.kept
    assert sorted(frame["version"]) == sorted(v for p, v in known.items() if p != "beta")
    assert dict(frame.select("version", "licence").iter_rows())[known["alpha"]] == "mit"  # as the Hub spells it
    assert set(frame["licence"]) == {"mit", "cc-by-4.0"}
    assert all(Path(p).is_relative_to(tmp_path / "rebuilt" / "mine") for p in frame["path"])

    again = collect_tasks(SourcesConfig.load(config).sources)  # rebuilt folders are reused, not rewritten
    assert sorted(again.kept["version"]) == sorted(frame["version"]) and again.removed.is_empty()
    only_test = SourcesConfig.model_validate(
        {
            "sources": [
                {
                    "kind": "tasks_export",
                    "name": "t",
                    "path": tmp_path / "tasks",
                    "out_dir": tmp_path / "r2",
                    "split": "test",
                }
            ]
        }
    )
    assert collect_tasks(only_test.sources).kept.height == 1


def test_cli_test_split_from_a_mix_eval_file_or_a_fraction(tmp_path: Path) -> None:
    pool_dir = make_pool(tmp_path)
    with Pool.open(pool_dir, create=False) as pool:
        names = sorted(row.name for row in pool.list() if row.status is VersionStatus.ACCEPTED)
    held = tmp_path / "eval.parquet"
    pl.DataFrame({"id": ["x:1"], "name": [names[0]]}).write_parquet(held)  # as `curate mix --eval-out` writes it
    out = tmp_path / "tasks"
    result = runner.invoke(app, ["export", "tasks", str(pool_dir), "--out", str(out), "--test-tasks", str(held)])
    assert result.exit_code == 0, result.output
    assert "(train 2, test 1)" in plain(result.output)
    loaded = load_export(out)
    assert loaded["test"]["name"] == [names[0]] and sorted(loaded["train"]["name"]) == names[1:]

    listed = tmp_path / "held.txt"
    listed.write_text(f"# held out\n{names[1]}\n")
    result = runner.invoke(
        app, ["export", "rl", str(pool_dir), "--out", str(tmp_path / "rl"), "--test-tasks", str(listed)]
    )
    assert result.exit_code == 0, result.output
    assert load_export(tmp_path / "rl")["test"]["task"] == [names[1]]

    both = runner.invoke(
        app,
        [
            "export",
            "tasks",
            str(pool_dir),
            "--out",
            str(tmp_path / "t2"),
            "--test-tasks",
            str(held),
            "--test-fraction",
            "0.5",
        ],
    )
    assert both.exit_code == 2 and "give one" in plain(both.output)
    no_name = tmp_path / "bad.parquet"
    pl.DataFrame({"id": ["x"]}).write_parquet(no_name)
    bad = runner.invoke(
        app, ["export", "tasks", str(pool_dir), "--out", str(tmp_path / "t3"), "--test-tasks", str(no_name)]
    )
    assert bad.exit_code == 2 and "no `name` column" in plain(bad.output)


def test_load_dataset_never_returns_an_earlier_export_of_the_same_name(tmp_path: Path) -> None:
    """datasets caches a local folder by its YAML configs: the content digest in each config's description keeps
    two exports named alike apart in one cache."""
    cache = str(tmp_path / "hf-cache")
    for folder, task in (("a", "x/one"), ("b", "x/two")):
        export_sft(records_to_frame([make_record(task=task)]), tmp_path / folder / "sft", gate=OPEN, sharegpt=False)
    for folder, task in (("a", "x/one"), ("b", "x/two")):
        assert datasets.load_dataset(str(tmp_path / folder / "sft"), split="train", cache_dir=cache)["task"] == [task]
    again = export_sft(records_to_frame([make_record(task="x/one")]), tmp_path / "c" / "sft", gate=OPEN, sharegpt=False)
    first = json.loads((tmp_path / "a" / "sft" / "export_report.json").read_text())
    assert again.content_digest == first["content_digest"]  # the same rows, the same digest
