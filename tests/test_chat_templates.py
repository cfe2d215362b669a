"""Exported SFT rows render through the chat templates TRL bundles as each model family expects.

A row is exported, loaded back the way TRL users load it (`datasets.load_dataset(folder)`) and rendered
with `tokenizer.apply_chat_template(messages, tools=...)` under every template in `trl/chat_templates`.
For Qwen3, Qwen2.5 and Llama 3.x the tool-call turn is compared with a hand-written rendering; for every
template, tool calls are never double-encoded and never silently dropped (`sft.tool_render`).

Harness-shaped rows (one turn with text, reasoning and a call; one with text, reasoning and parallel calls) and
rows imported from a Harbor job (`tests/data/harbor_job`: tools without descriptions, as Harbor writes them) are
rendered under every bundled template that knows tool calls, as exported and after the template-safe transforms
`curation.export.transforms` picks for it: which templates render them right is measured, and must equal that
module's tables (`AS_IS`, `FOR_TEMPLATE`, `UNFIXABLE`). The Harbor rows are also exported with `for_template` for
every such template and rendered as loaded, or the export is refused with the reason.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import datasets
import pytest

from curation.export import GateOptions, export_sft
from curation.export.common import ExportError
from curation.export.transforms import (
    AS_IS,
    FOR_TEMPLATE,
    TRANSFORMS,
    UNFIXABLE,
    Transform,
    apply_tool_transforms,
    apply_transforms,
    chosen_transforms,
    for_template,
    template_family,
)
from qaflow.importers.harbor_jobs import import_job
from qaflow.models.frame import records_to_frame
from sft.tool_render import tool_call_problems
from tests.test_export import parallel_record, tiny_tokenizer
from tests.trajectories import make_record

TRL_TEMPLATES = Path(__import__("trl").__file__).parent / "chat_templates"
HARBOR_JOB = Path(__file__).parent / "data" / "harbor_job" / "2026-01-05__10-00-00"
TOOL = {
    "type": "function",
    "function": {
        "name": "bash",
        "description": "Run a shell command.",
        "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
    },
}
SINGLE_CALL = [
    {"role": "system", "content": "You are a coding agent."},
    {"role": "user", "content": "List the files."},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {"id": "c0", "type": "function", "function": {"name": "bash", "arguments": '{"command": "ls -a /app"}'}}
        ],
    },
    {"role": "tool", "tool_call_id": "c0", "content": "a.txt"},
    {"role": "assistant", "content": "One file: a.txt."},
]

QWEN_CALL = (
    '<|im_start|>assistant\n<tool_call>\n{"name": "bash", "arguments": {"command": "ls -a /app"}}\n</tool_call>'
    "<|im_end|>\n"
)
QWEN_RESULT = "<|im_start|>user\n<tool_response>\na.txt\n</tool_response><|im_end|>\n"
QWEN3_CALL = (
    "<|im_start|>assistant\n<think>\n\n</think>\n\n"
    '<tool_call>\n{"name": "bash", "arguments": {"command": "ls -a /app"}}\n</tool_call><|im_end|>\n'
)
LLAMA_CALL = (
    "<|start_header_id|>assistant<|end_header_id|>\n\n"
    '{"name": "bash", "parameters": {"command": "ls -a /app"}}<|eot_id|>'
)
LLAMA_RESULT = '<|start_header_id|>ipython<|end_header_id|>\n\n"a.txt"<|eot_id|>'
EXPECTED = {
    "qwen2_5.jinja": (QWEN_CALL, QWEN_RESULT),
    "qwen2_5_training.jinja": (QWEN_CALL, QWEN_RESULT),
    "qwen3.jinja": (QWEN_CALL, QWEN_RESULT),
    "qwen3_training.jinja": (QWEN3_CALL, QWEN_RESULT),
    "llama3_1.jinja": (LLAMA_CALL, LLAMA_RESULT),
    "llama3_2.jinja": (LLAMA_CALL, LLAMA_RESULT),
}
"""Hand-written: the tool-call turn and the tool-result turn as each family's own format has them."""

NO_TOOL_CONVERSATIONS = {
    "cohere",
    "cohere2",
    "gemma",
    "gemma3",
    "idefics3",
    "llava_next",
    "smolvlm",
}
"""Families whose templates refuse a system message or a tool turn at all (checked below, not assumed)."""
NO_TOOL_CALLS = {"deepseek_r1_distill", "lfm2", "llama3", "phi3", "phi3_5", "qwen2_5_vl"}
"""Families whose templates render no tool calls (checked below: the conversation renders, the calls do not);
LFM2's first template expects the calls written into the assistant's text."""
STRING_ARGUMENTS = {"deepseekv3.jinja"}
"""DeepSeek-V3's inference template concatenates `arguments` as a string; TRL's training variant takes objects."""


def family(template: str) -> str:
    return template.removesuffix(".jinja").removesuffix("_training")


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> datasets.DatasetDict:
    out = tmp_path_factory.mktemp("export") / "sft"
    single = make_record(task="demo/single", messages=SINGLE_CALL, tools=[TOOL])
    export_sft(
        records_to_frame([single, parallel_record()]), out, gate=GateOptions(include_unaccepted=True), sharegpt=False
    )
    return datasets.load_dataset(str(out), cache_dir=str(out.parent / "hf-cache"))


@functools.cache
def tokenizer() -> Any:
    return tiny_tokenizer()


def render(template: str, row: dict[str, Any], **extra: Any) -> str:
    text = tokenizer().apply_chat_template(
        row["messages"],
        tools=row["tools"],
        chat_template=(TRL_TEMPLATES / template).read_text(),
        tokenize=False,
        bos_token="<|begin_of_text|>",
        date_string="26 Jul 2024",
        **extra,
    )
    assert isinstance(text, str)
    return text


def rows(exported: datasets.DatasetDict) -> dict[str, dict[str, Any]]:
    return {row["task"]: row for row in exported["train"]}


def string_arguments(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for message in messages:
        calls = message.get("tool_calls")
        if calls:
            calls = [
                {**c, "function": {**c["function"], "arguments": json.dumps(c["function"]["arguments"])}} for c in calls
            ]
        out.append({**message, "tool_calls": calls})
    return out


def test_arguments_load_as_objects(exported: datasets.DatasetDict) -> None:
    row = rows(exported)["demo/single"]
    assert row["messages"][2]["tool_calls"][0]["function"]["arguments"] == {"command": "ls -a /app"}
    assert row["tools"] == [TOOL]


@pytest.mark.parametrize("template", sorted(EXPECTED))
def test_hand_written_renderings(template: str, exported: datasets.DatasetDict) -> None:
    text = render(template, rows(exported)["demo/single"])
    call, result = EXPECTED[template]
    assert call in text
    assert result in text
    assert text.index(call) < text.index(result)
    assert tool_call_problems(rows(exported)["demo/single"]["messages"], text) == []


def test_every_bundled_template(exported: datasets.DatasetDict) -> None:
    """Every template either renders the calls right, or is a family that has no tool calls at all."""
    templates = sorted(p.name for p in TRL_TEMPLATES.glob("*.jinja"))
    assert len(templates) >= 40
    right, without_calls, without_tools = [], [], []
    for template in templates:
        for task in ("demo/single", "demo/parallel"):
            row = rows(exported)[task]
            try:
                text = render(template, row)
            except Exception as e:  # jinja raises whatever the template says
                message = str(e)
                if family(template) in NO_TOOL_CONVERSATIONS:
                    without_tools.append(template)
                    break
                if task == "demo/parallel" and "single tool-call" in message:
                    continue  # Llama 3.1/3.2 templates support one call per turn, and say so
                if template in STRING_ARGUMENTS:
                    text = render(template, {**row, "messages": string_arguments(row["messages"])})
                else:
                    raise AssertionError(f"{template} fails on {task}: {message}") from e
            problems = tool_call_problems(row["messages"], text)
            if family(template) in NO_TOOL_CALLS:
                assert problems and all("not rendered" in p for p in problems), (template, problems)
                without_calls.append(template)
                break
            assert problems == [], (template, task, problems)
        else:
            right.append(template)
    assert {family(t) for t in without_tools} == NO_TOOL_CONVERSATIONS
    assert {family(t) for t in without_calls} == NO_TOOL_CALLS
    assert len(right) >= 40, right
    for name in ("qwen3_training.jinja", "qwen2_5_training.jinja", "glm4moe_training.jinja", "gptoss_training.jinja"):
        assert name in right
    assert any(t.startswith("nemotron") for t in right) and "llama3_1.jinja" in right


def test_string_arguments_are_caught(exported: datasets.DatasetDict) -> None:
    """What the export avoids: the same row with JSON-string arguments renders double-encoded under Qwen2.5."""
    row = rows(exported)["demo/single"]
    text = render("qwen2_5_training.jinja", {**row, "messages": string_arguments(row["messages"])})
    assert tool_call_problems(row["messages"], text) == [
        "message 2 tool call 0 (bash): arguments are rendered double-encoded (a JSON string, not an object)"
    ]


def _call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


HARNESS_MIXED = [
    {"role": "system", "content": "You are a coding agent."},
    {"role": "user", "content": "Fix the failing test."},
    {
        "role": "assistant",
        "content": "I will run the failing test first.",
        "reasoning_content": "The failure is probably in the parser.",
        "tool_calls": [_call("m0", "bash", {"command": "pytest -x tests/test_mixed_alpha.py"})],
    },
    {"role": "tool", "tool_call_id": "m0", "content": "1 failed"},
    {"role": "assistant", "content": "Fixed.", "reasoning_content": "It passes now."},
]
"""What the harness records: text, reasoning and a tool call in one assistant turn."""
HARNESS_PARALLEL = [
    {"role": "system", "content": "You are a coding agent."},
    {"role": "user", "content": "Fix the failing test."},
    {
        "role": "assistant",
        "content": "Reading both at once.",
        "reasoning_content": "Two independent reads.",
        "tool_calls": [
            _call("p0", "read", {"path": "/app/src/parallel_first.py"}),
            _call("p1", "bash", {"command": "grep -rn parallel_second /app"}),
        ],
    },
    {"role": "tool", "tool_call_id": "p0", "content": "x = 1"},
    {"role": "tool", "tool_call_id": "p1", "content": "/app/b.py:1"},
    {"role": "assistant", "content": "Both read."},
]
"""Parallel calls with text and reasoning in their turn; every argument value is text no other message has."""


def tool_templates() -> list[str]:
    """The bundled templates that know tool calls (their source reads `tool_calls`)."""
    return sorted(p.name for p in TRL_TEMPLATES.glob("*.jinja") if "tool_calls" in p.read_text())


@pytest.fixture(scope="module")
def harness_rows(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    out = tmp_path_factory.mktemp("harness") / "sft"
    records = [
        make_record(task="demo/mixed", messages=HARNESS_MIXED),
        make_record(task="demo/parallel", messages=HARNESS_PARALLEL),
    ]
    export_sft(records_to_frame(records), out, gate=GateOptions(include_unaccepted=True), sharegpt=False)
    return rows(datasets.load_dataset(str(out), cache_dir=str(out.parent / "hf-cache")))


@pytest.fixture(scope="module")
def harbor_records() -> Any:
    return records_to_frame(import_job(HARBOR_JOB).records)


def export_harbor(records: Any, out: Path, for_template: str | None = None) -> dict[str, dict[str, Any]]:
    """The Harbor job's sessions exported (every one the guard takes), loaded as TRL users load them."""
    gate = GateOptions(include_unaccepted=True, include_failed=True)
    export_sft(records, out, gate=gate, sharegpt=False, for_template=for_template)
    loaded = datasets.load_dataset(str(out), cache_dir=str(out.parent / "hf-cache"))
    return {f"harbor/{row['rollout_id']}": row for row in loaded["train"]}


@pytest.fixture(scope="module")
def tool_rows(
    harness_rows: dict[str, dict[str, Any]], harbor_records: Any, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, dict[str, Any]]:
    """The harness rows and the Harbor rows, whose tools have no description."""
    harbor = export_harbor(harbor_records, tmp_path_factory.mktemp("harbor") / "sft")
    assert len(harbor) == 2 and any(len(m["tool_calls"] or []) > 1 for r in harbor.values() for m in r["messages"])
    assert all("description" not in t["function"] for r in harbor.values() for t in r["tools"])
    return harness_rows | harbor


def transformed(row: dict[str, Any], transforms: Sequence[Transform]) -> dict[str, Any]:
    return {
        **row,
        "messages": apply_transforms(row["messages"], transforms),
        "tools": apply_tool_transforms(row["tools"], transforms),
    }


def render_problem(template: str, row: dict[str, Any], rendered: dict[str, Any] | None = None) -> str | None:
    """None when `template` accepts `rendered` (default: `row`) and renders every call of the row with its
    arguments; else why not."""
    try:
        text = render(template, rendered or row)
    except Exception as e:  # jinja raises whatever the template says
        return f"refused: {str(e).splitlines()[0][:80]}"
    problems = tool_call_problems(row["messages"], text)
    return problems[0] if problems else None


def measure(rows_: dict[str, dict[str, Any]], transforms: Any) -> dict[str, dict[str, str | None]]:
    """template -> task -> render_problem, with the row through `transforms(template)`."""
    return {
        template: {
            task: render_problem(template, row, transformed(row, transforms(template))) for task, row in rows_.items()
        }
        for template in tool_templates()
    }


def right(matrix: dict[str, dict[str, str | None]]) -> set[str]:
    return {template for template, by_task in matrix.items() if not any(by_task.values())}


def needed(template: str) -> Any:
    try:
        return chosen_transforms([], template)
    except ValueError:
        return ()


def test_harness_and_harbor_rows_under_every_tool_template(tool_rows: dict[str, dict[str, Any]]) -> None:
    """As exported, the templates `AS_IS` lists render every row right and those `FOR_TEMPLATE` lists do not; with
    the transforms `for_template` picks, every template but the `UNFIXABLE` ones does; all transforms together
    break no template."""
    templates = tool_templates()
    assert len(templates) >= 40
    as_exported = measure(tool_rows, lambda t: ())
    with_needed = measure(tool_rows, needed)
    with_all = measure(tool_rows, lambda t: TRANSFORMS)
    fixable = {t for t in templates if t.removesuffix(".jinja") not in UNFIXABLE}
    print(f"\n{len(right(as_exported))} of {len(templates)} tool-call templates render the export as is; with the")
    print(f"transforms each needs {len(right(with_needed))} of {len(templates)}; unfixable: {sorted(UNFIXABLE)}")
    for template in sorted(set(templates) - right(as_exported)):
        print(f"  {template}: {as_exported[template]} -> {[t.name.value for t in needed(template)]}")

    assert right(as_exported) == {t for t in fixable if template_family(t) in AS_IS}
    assert right(with_needed) == fixable == right(with_all)
    for template in sorted(fixable):
        family = template_family(template)
        assert (family in AS_IS) != (family in FOR_TEMPLATE), template
        if family in FOR_TEMPLATE:
            assert for_template(template) == FOR_TEMPLATE[family]
            # each transform the table names is needed: without it the template still fails
            for left_out in FOR_TEMPLATE[family]:
                rest = tuple(t for t in needed(template) if t.name != left_out)
                assert any(measure_one(tool_rows, template, rest).values()), (template, left_out)
    refusal = "refused: Cannot pass both content and thinking in an assistant message with tool calls"
    assert as_exported["gptoss.jinja"]["demo/mixed"] == as_exported["gptoss.jinja"]["demo/parallel"]
    assert (as_exported["gptoss.jinja"]["demo/mixed"] or "").startswith(refusal)
    split = split_only(tool_rows)
    assert render_problem("gptoss.jinja", tool_rows["demo/parallel"], {**tool_rows["demo/parallel"], "messages": split})
    harbor = sorted(task for task in tool_rows if task.startswith("harbor/"))
    assert {as_exported["gptoss.jinja"][t] for t in harbor} == {"refused: 'dict object' has no attribute 'description'"}
    assert {as_exported["muse_glimmer.jinja"][t] for t in harbor} == {
        "refused: Object of type Undefined is not JSON serializable"
    }
    assert as_exported["llama3_1.jinja"]["demo/mixed"] is None
    assert (
        as_exported["llama3_1.jinja"]["demo/parallel"] == "refused: This model only supports single tool-calls at once!"
    )


def measure_one(rows_: dict[str, dict[str, Any]], template: str, transforms: Any) -> dict[str, str | None]:
    return {task: render_problem(template, row, transformed(row, transforms)) for task, row in rows_.items()}


def split_only(rows_: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The parallel row without its text: GPT-OSS takes it, and renders only the first call."""
    messages = [{**m, "content": ""} if m["tool_calls"] else m for m in rows_["demo/parallel"]["messages"]]
    return messages


def test_unfixable_templates_are_refused_with_the_reason() -> None:
    for stem, why in UNFIXABLE.items():
        with pytest.raises(ValueError, match="no transform helps"):
            for_template(stem)
        assert why
    assert for_template("deepseekv3_training.jinja") == ()
    with pytest.raises(ValueError, match="not a TRL-bundled template with tool calls"):
        for_template("gemma")


def test_harbor_rows_exported_for_each_tool_template_render_or_are_refused(harbor_records: Any, tmp_path: Path) -> None:
    """What a user of a Harbor job does: `export sft --for-template T`, load the folder, render under T. Every
    TRL-bundled template with tool calls renders every call, or the export is refused with the reason."""
    rendered, refused = [], []
    for template in tool_templates():
        stem = template.removesuffix(".jinja")
        out = tmp_path / stem / "sft"
        if stem in UNFIXABLE:
            with pytest.raises(ExportError, match="no transform helps"):
                export_harbor(harbor_records, out, for_template=stem)
            refused.append(stem)
            continue
        rows_ = export_harbor(harbor_records, out, for_template=stem)
        assert {task: render_problem(template, row) for task, row in rows_.items()} == dict.fromkeys(rows_), template
        rendered.append(stem)
    assert len(rendered) + len(refused) == len(tool_templates()) and sorted(refused) == sorted(UNFIXABLE)
    print(f"\n{len(rendered)} of {len(tool_templates())} tool-call templates render the Harbor rows exported for them")
