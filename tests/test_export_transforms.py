"""Template-safe transforms of exported SFT sessions: their shapes, `export sft --transform/--for-template`, the
card."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from curation.export import GateOptions, export_sft, load_export
from curation.export.transforms import (
    TRANSFORMS,
    TransformName,
    apply_tool_transforms,
    apply_transforms,
    separate_thinking,
    split_parallel_calls,
)
from qaflow.cli import app
from qaflow.models.frame import records_to_frame, write_shard
from qaflow.models.rollout import RolloutRecord
from tests.test_chat_templates import HARNESS_MIXED, HARNESS_PARALLEL
from tests.trajectories import make_record


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def shape(messages: list[dict]) -> list[tuple]:
    return [
        (m["role"], m.get("content"), m.get("reasoning_content"), [c["id"] for c in m.get("tool_calls") or []])
        if m["role"] == "assistant"
        else (m["role"], m.get("tool_call_id"))
        for m in messages
    ]


def test_split_parallel_calls_gives_each_call_its_turn_and_its_result_in_order() -> None:
    # results out of call order, and one that answers no call: each result follows its call, the stray one last
    messages = [
        *HARNESS_PARALLEL[:3],
        {"role": "tool", "tool_call_id": "p1", "content": "/app/b.py:1"},
        {"role": "tool", "tool_call_id": "zz", "content": "stray"},
        {"role": "tool", "tool_call_id": "p0", "content": "x = 1"},
        HARNESS_PARALLEL[-1],
    ]
    out = split_parallel_calls(messages)
    assert shape(out)[2:] == [
        ("assistant", "Reading both at once.", "Two independent reads.", ["p0"]),
        ("tool", "p0"),
        ("assistant", "", None, ["p1"]),
        ("tool", "p1"),
        ("tool", "zz"),
        ("assistant", "Both read.", None, []),
    ]
    assert [c for m in out for c in m.get("tool_calls") or []] == HARNESS_PARALLEL[2]["tool_calls"]
    assert messages[2]["tool_calls"] == HARNESS_PARALLEL[2]["tool_calls"]  # the input is not changed
    assert split_parallel_calls(HARNESS_MIXED) == HARNESS_MIXED


def test_separate_thinking_puts_text_and_reasoning_before_the_calls() -> None:
    out = separate_thinking(HARNESS_MIXED)
    assert shape(out)[2:] == [
        ("assistant", "I will run the failing test first.", "The failure is probably in the parser.", []),
        ("assistant", "", None, ["m0"]),
        ("tool", "m0"),
        ("assistant", "Fixed.", "It passes now.", []),
    ]
    reasoning_only = [{**HARNESS_PARALLEL[2], "content": ""}]
    assert separate_thinking(reasoning_only) == reasoning_only


def test_both_transforms_count_the_turns_they_change() -> None:
    counts: dict[TransformName, int] = {}
    out = apply_transforms(HARNESS_PARALLEL, TRANSFORMS, counts)
    assert counts == {
        TransformName.SEPARATE_THINKING: 1,
        TransformName.SPLIT_PARALLEL_CALLS: 1,
        TransformName.DESCRIBE_TOOLS: 0,  # it changes tool definitions, never a message
    }
    assert [len(m.get("tool_calls") or []) for m in out if m["role"] == "assistant"] == [0, 1, 1, 0]
    counts = {}
    apply_transforms(HARNESS_PARALLEL, TRANSFORMS[1:2], counts)
    assert counts == {TransformName.SPLIT_PARALLEL_CALLS: 1}


def test_describe_tools_gives_undescribed_tools_a_description_from_name_and_schema() -> None:
    harbor = [
        {"type": "function", "function": {"name": "Bash", "parameters": {"type": "object", "properties": {
            "command": {"type": "string"}, "timeout": {"type": "integer"}}}}},
        {"type": "function", "function": {"name": "Stop", "parameters": {"type": "object", "properties": {}}}},
        {"type": "function", "function": {"name": "Read", "description": "Read a file.", "parameters": {}}},
        {"name": "Flat", "description": "  ", "parameters": {"properties": {"path": {}}}},
    ]  # fmt: skip
    counts: dict[TransformName, int] = {}
    out = apply_tool_transforms(harbor, TRANSFORMS, counts)
    assert [(t.get("function") or t)["description"] for t in out] == [
        "Bash tool. Arguments: command (string), timeout (integer).",
        "Stop tool. No arguments.",
        "Read a file.",
        "Flat tool. Arguments: path.",
    ]
    assert counts[TransformName.DESCRIBE_TOOLS] == 3 and counts[TransformName.SPLIT_PARALLEL_CALLS] == 0
    assert out[0]["function"]["parameters"] == harbor[0]["function"]["parameters"] and out[0]["type"] == "function"
    assert "description" not in harbor[0]["function"]  # the input is not changed


def harness_records() -> list[RolloutRecord]:
    return [
        make_record(task="demo/mixed", messages=HARNESS_MIXED),
        make_record(task="demo/parallel", messages=HARNESS_PARALLEL),
    ]


def harness_frame() -> pl.DataFrame:
    return records_to_frame(harness_records())


def test_export_for_gptoss_writes_the_transformed_sessions_and_names_the_transforms(tmp_path: Path) -> None:
    out = tmp_path / "sft"
    report = export_sft(harness_frame(), out, gate=GateOptions(include_unaccepted=True), for_template="gptoss")
    assert [(t.name, t.turns_changed, t.tools_changed) for t in report.transforms] == [
        (TransformName.SEPARATE_THINKING, 2, 0),
        (TransformName.SPLIT_PARALLEL_CALLS, 1, 0),
        (TransformName.DESCRIBE_TOOLS, 0, 0),  # the harness's tools have descriptions
    ]
    rows = {r["task"]: r for r in load_export(out)["train"]}
    assert [len(m["tool_calls"] or []) for m in rows["demo/parallel"]["messages"]] == [0, 0, 0, 1, 0, 1, 0, 0]
    assert rows["demo/parallel"]["turns"] == 2  # the agent's turns as collected
    card = (out / "README.md").read_text()
    assert "## Template-safe transforms" in card and "Chosen for the chat template `gptoss`." in card
    assert "| `separate-thinking` | 2 |" in card and "| `split-parallel-calls` | 1 |" in card
    saved = json.loads((out / "export_report.json").read_text())
    assert saved["for_template"] == "gptoss" and len(saved["transforms"]) == 3

    plain = export_sft(harness_frame(), tmp_path / "plain", gate=GateOptions(include_unaccepted=True))
    assert plain.transforms == [] and "Template-safe" not in (tmp_path / "plain" / "README.md").read_text()


def test_cli_transform_and_for_template(tmp_path: Path) -> None:
    shards = tmp_path / "rollouts"
    write_shard(harness_records(), shards)
    runner = CliRunner()
    base = ["export", "sft", str(shards), "--include-unaccepted", "--no-filter"]
    result = runner.invoke(app, [*base, "--out", str(tmp_path / "a"), "--transform", "split-parallel-calls", "--json"])
    assert result.exit_code == 0, result.output
    assert [(t["name"], t["turns_changed"]) for t in json.loads(result.stdout)["transforms"]] == [
        ("split-parallel-calls", 1)
    ]
    assert "Asked for by name (`--transform`)." in (tmp_path / "a" / "README.md").read_text()

    as_is = runner.invoke(app, [*base, "--out", str(tmp_path / "b"), "--for-template", "qwen3_training.jinja"])
    assert as_is.exit_code == 0, as_is.output
    assert "It renders the export as it is: no transform ran." in (tmp_path / "b" / "README.md").read_text()

    for bad, says in (
        (["--transform", "split-parallel-calls,nope"], "unknown transform nope"),
        (["--for-template", "deepseekv3"], "deepseekv3: no transform helps"),
        (["--for-template", "gemma"], "not a TRL-bundled template with tool calls"),
    ):
        refused = runner.invoke(app, [*base, "--out", str(tmp_path / "c"), *bad])
        assert refused.exit_code == 2 and says in " ".join(refused.output.split()), refused.output
        assert not (tmp_path / "c").exists()
