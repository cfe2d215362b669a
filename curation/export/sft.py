"""`qaflow export`: rollouts and task pools as Hugging Face datasets, each with a dataset card.

- `export_sft`: one row per trajectory: `messages` (OpenAI chat format), `tools`, metadata; plus a
  ShareGPT variant. Rows that cannot be exported are left out with a reason (`RemovalReason`),
  never raised.
- `export_rl` (`curation.export.rl`): one row per task version: prompt, tools, grouping keys, per-effort stats.
- `export_tasks` (`curation.export.tasks`): a pool's tasks as rows with their files; `rows_to_task_dir` rebuilds one.

`tools` is a `List(Json())` column (datasets >= 4.7): each tool definition is stored as JSON text
in Arrow/parquet and decoded back to a dict, so `tokenizer.apply_chat_template(row["messages"],
tools=row["tools"])` works on a loaded row as is. A struct column cannot hold JSON Schemas whose
properties differ from tool to tool without inventing null keys.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl
from datasets import Features, Json, List, Value
from pydantic import BaseModel, Field, ValidationError

from curation.export import card as cards
from curation.export.common import (
    DEFAULT_MAX_SHARD_BYTES,
    MESSAGE_FEATURE,
    ExportError,
    ExportKind,
    ExportReport,
    NothingToExport,
    Provenance,
    RemovalReason,
    Removed,
    SplitSpec,
    conform_frame,
    dataset_from_rows,
    load_export,
    message_row,
    prepare_out_dir,
    push_export,
    require_hub_token,
    split_rows,
    value_counts,
    write_export,
)
from curation.export.facts import (
    FACT_COLUMNS,
    FACT_FEATURES,
    GateOptions,
    TaskFacts,
    audit_summary,
    check_graded,
    check_hack,
    check_passed,
    check_policy,
    check_task,
    export_facts,
    with_default_licence,
    with_sources,
)
from curation.export.guard import DEFAULT_MAX_MESSAGE_CHARS, Rejected, guard_rollout, structure_faults
from curation.export.rl import export_rl
from curation.export.sharegpt import SHAREGPT_DIR, SHAREGPT_MAPPING, sharegpt_features, sharegpt_row
from curation.export.tasks import export_tasks, rows_to_task_dir
from curation.export.transforms import (
    AppliedTransform,
    Transform,
    TransformName,
    apply_tool_transforms,
    apply_transforms,
    chosen_transforms,
)
from qaflow.pool import Pool

__all__ = [
    "ExportError",
    "ExportKind",
    "ExportReport",
    "FunnelStep",
    "GateOptions",
    "NothingToExport",
    "Provenance",
    "RemovalReason",
    "Removed",
    "SplitSpec",
    "conform_frame",
    "export_rl",
    "export_sft",
    "export_tasks",
    "load_export",
    "load_funnel",
    "push_export",
    "require_hub_token",
    "rows_to_task_dir",
    "sft_rows",
]

SFT_META = Features(
    {
        "rollout_id": Value("string"),
        "task": Value("string"),
        "task_version": Value("string"),
        "source": Value("string"),
        "model": Value("string"),
        "effort": Value("string"),
        "attempt": Value("int64"),
        "round": Value("int64"),
        "agent": Value("string"),
        "reward": Value("float64"),
        "full_reward": Value("bool"),
        "exit_status": Value("string"),
        "turns": Value("int64"),
        "thinking_tokens": Value("int64"),
        **FACT_FEATURES,
    }
)
SFT_FEATURES = Features({"messages": List(MESSAGE_FEATURE), "tools": List(Json()), **SFT_META})

SFT_COLUMNS = {
    "messages": "The trajectory, OpenAI chat format; every key on every message, null where unused. "
    "Tool-call arguments are JSON objects (dicts), as chat templates expect.",
    "tools": "Tool definitions offered to the agent (OpenAI function format), decoded to dicts.",
    "rollout_id": "Stable id of the attempt (task version, model, effort, attempt, round).",
    "task_version": "sha256 of the task's files: the version the agent saw.",
    "effort": "Reasoning effort: off, low, medium, xhigh.",
    "reward": "Verifier reward (null when there was none).",
    "full_reward": "The verifier gave full reward.",
    "exit_status": "ok, agent_timeout, verifier_timeout or error.",
    "turns": "Assistant turns.",
    "thinking_tokens": "Reasoning tokens over all turns.",
    "round": "Collection round (RL rounds; 0 otherwise).",
    **FACT_COLUMNS,
}


class FunnelStep(BaseModel):
    """One step of the curation funnel: rows kept after it, rows it removed, and why."""

    name: str
    kept: int
    removed: int = 0
    reasons: dict[str, int] = Field(default_factory=dict)


_FUNNEL_KEYS = {
    "name": ("name", "rule", "stage", "filter", "step"),
    "kept": ("kept", "rows_out", "rows", "remaining", "out", "count"),
    "removed": ("removed", "dropped"),
    "reasons": ("reasons", "removed_by_reason", "dropped_by_reason"),
}


def load_funnel(path: Path) -> list[FunnelStep]:
    """The funnel written by the filter stage: a JSON list of steps (`{name, kept, removed, reasons}`, common
    synonyms accepted), an object holding one under `funnel` or `steps` (as `FilterResult.summary()`
    writes; its `rows_in` becomes a first `input` step), or a mapping step -> rows kept.

    Raises:
        ExportError: the file is missing or holds none of these.
    """
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ExportError(path, f"cannot read the funnel: {e}") from e
    first: list[FunnelStep] = []
    if isinstance(data, dict) and ("funnel" in data or "steps" in data):
        if isinstance(data.get("rows_in"), int):
            first = [FunnelStep(name="input", kept=data["rows_in"])]
        data = data.get("funnel", data.get("steps"))
    try:
        if isinstance(data, dict) and all(isinstance(v, int) for v in data.values()):
            return [FunnelStep(name=k, kept=v) for k, v in data.items()]
        if isinstance(data, list) and all(isinstance(item, dict) for item in data):
            return first + [FunnelStep.model_validate(_funnel_fields(item)) for item in data]
    except ValidationError as e:
        raise ExportError(path, f"not a funnel: {e.errors()[0]['msg']} in {e.errors()[0]['loc']}") from e
    raise ExportError(path, "not a funnel: expected a list of {name, kept, removed} or a mapping step -> rows kept")


def _funnel_fields(item: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for field, synonyms in _FUNNEL_KEYS.items():
        found = next((item[k] for k in synonyms if k in item), None)
        if found is not None:
            out[field] = found
    return out


def sft_rows(
    frame: pl.DataFrame,
    *,
    facts: Mapping[str, TaskFacts] | None = None,
    gate: GateOptions | None = None,
    max_message_chars: int = DEFAULT_MAX_MESSAGE_CHARS,
    transforms: Sequence[Transform] = (),
    counts: dict[TransformName, int] | None = None,
) -> tuple[list[dict[str, Any]], list[Removed]]:
    """The exportable rows of a rollout frame, and the removed ones with their reasons (`facts`: the pool's,
    by task version; None: no task is checked and the fact columns are null). Each row's messages go through
    `transforms` (`curation.export.transforms`), and so do its tools; `counts` adds the assistant turns (or tool
    definitions) each one changed."""
    gate = gate or GateOptions()
    rows: list[dict[str, Any]] = []
    removed: list[Removed] = []
    faults = structure_faults(frame)
    for row, fault in zip(frame.iter_rows(named=True), faults, strict=True):
        try:
            check_policy(row, gate)
            task_columns = check_task(row["task_version"], facts, gate)
            check_graded(row, gate)
            check_passed(row, gate)
            check_hack(row, gate)
            tools = guard_rollout(row, fault, max_message_chars=max_message_chars)
            messages = apply_transforms([message_row(m) for m in row["messages"]], transforms, counts)
            tools = apply_tool_transforms(tools, transforms, counts)
        except Rejected as e:
            removed.append(_removed(row, e.reason, e.detail))
            continue
        except (TypeError, ValueError, KeyError, AttributeError, RecursionError) as e:
            removed.append(_removed(row, RemovalReason.UNEXPORTABLE, f"{type(e).__name__}: {e}"))
            continue
        meta = {k: row[k] for k in SFT_META if k not in FACT_FEATURES}
        rows.append({"messages": messages, "tools": tools, **meta, **task_columns})
    return rows, removed


def _removed(row: dict[str, Any], reason: RemovalReason, detail: str) -> Removed:
    return Removed(id=str(row.get("rollout_id") or ""), task=str(row.get("task") or ""), reason=reason, detail=detail)


def unfiltered_note(rows: list[dict[str, Any]]) -> str | None:
    """A warning when rows hold attempts a training set rarely wants (failed, timed out)."""
    failed = sum(1 for r in rows if not r["full_reward"] or r["exit_status"] != "ok")
    if not failed:
        return None
    return (
        f"{failed} of {len(rows)} rows are attempts without full reward or that did not end ok (timeouts); "
        "was `qaflow filter` run first?"
    )


def export_sft(
    frame: pl.DataFrame,
    out_dir: Path,
    *,
    pool: Pool | Path | str | None = None,
    gate: GateOptions | None = None,
    licences: Mapping[str, str | None] | None = None,
    split: SplitSpec | None = None,
    funnel: list[FunnelStep] | None = None,
    provenance: Provenance | None = None,
    sharegpt: bool = True,
    max_message_chars: int = DEFAULT_MAX_MESSAGE_CHARS,
    license: str | None = None,
    sources: Mapping[str, str] | None = None,
    overwrite: bool = False,
    max_shard_bytes: int = DEFAULT_MAX_SHARD_BYTES,
    tokenizer: str | None = None,
    transforms: Sequence[str] = (),
    for_template: str | None = None,
) -> ExportReport:
    """Write the SFT dataset of a rollout frame to `out_dir` (layout in `curation.export.common`).

    With `tokenizer` (a model folder or hub id), every exported session is counted in its tokens and the card
    states the distribution and the `max_length` TRL's SFTTrainer needs (`sft.lengths`).

    `transforms` (names) and `for_template` (a TRL-bundled chat template: the transforms it needs) rewrite each
    session into a shape that template renders (`curation.export.transforms`); the card names what ran and why.

    `sources` (task version -> source name, as a pipeline knows it) wins over the pool's source (task.toml's, else
    `local`); every licence is written as the Hub spells it (`apache-2.0`).

    Only rows of accepted task versions of `pool` and of correctly graded attempts are written, unless `gate`
    says otherwise; scripted policies' rows are left out too. The rest are listed in the report with reasons.

    Raises:
        ExportError: the frame is not a rollout frame, `out_dir` is a non-empty folder (without
            `overwrite`), no pool where the gate needs one, or no row is left to export (the error lists
            the removed rows), an unknown transform, or a template no transform fixes.
    """
    out_dir = Path(out_dir)
    try:
        chosen = chosen_transforms(transforms, for_template)
    except ValueError as e:
        raise ExportError(out_dir, str(e)) from e
    gate = gate or GateOptions()
    frame = conform_frame(frame)
    prepare_out_dir(out_dir, overwrite=overwrite)
    facts = export_facts(pool, gate, licences)
    changed: dict[TransformName, int] = {}
    rows, removed = sft_rows(
        frame, facts=facts, gate=gate, max_message_chars=max_message_chars, transforms=chosen, counts=changed
    )
    with_default_licence(rows, license)
    with_sources(rows, sources)
    if not rows:
        reasons = ", ".join(sorted({r.reason.value for r in removed})) or "the input is empty"
        raise NothingToExport(
            out_dir, f"nothing to export: {len(removed)} of {frame.height} rows removed ({reasons})", removed
        )
    parts = split_rows(rows, split)
    configs = {"default": {name: dataset_from_rows(part, SFT_FEATURES) for name, part in parts.items()}}
    notes = []
    if gate.include_failed:
        failed = sum(1 for r in rows if not r["full_reward"] or r["exit_status"] != "ok")
        notes.append(
            f"exported with --include-failed: {failed} of {len(rows)} sessions are attempts the verifier did not "
            "pass (no full reward, or not ended ok); SFT on them teaches failures"
        )
        note = unfiltered_note(rows) if funnel is None else None
        if note:
            notes.append(note)
    if facts is None:
        notes.append("no pool was given: task status, audit verdict and licence columns are null")
    if sharegpt:
        converted = {name: [sharegpt_row(r) for r in part] for name, part in parts.items()}
        features = sharegpt_features(SFT_META)
        configs[SHAREGPT_DIR] = {
            name: dataset_from_rows([r for r, _ in pairs], features) for name, pairs in converted.items()
        }
        dropped = sum(d for pairs in converted.values() for _, d in pairs)
        if dropped:
            notes.append(
                f"ShareGPT: the text beside the tool calls of {dropped} assistant turns has no place and is dropped"
            )
    report = ExportReport(
        kind=ExportKind.SFT,
        out_dir=out_dir,
        rows=len(rows),
        removed=removed,
        counts={key: value_counts(rows, key) for key in ("source", "licence", "effort", "model")},
        notes=notes,
        provenance=provenance or Provenance.for_api([]),
        transforms=[applied(t, changed.get(t.name, 0)) for t in chosen],
        for_template=for_template,
    )
    if tokenizer is not None:
        from curation.token_lengths import model_token_lengths

        report.token_lengths = model_token_lengths([r["messages"] for r in rows], [r["tools"] for r in rows], tokenizer)
    tasks_per_split = {name: len({r["task"] for r in part}) for name, part in parts.items()}
    audit = audit_summary(rows)

    def card(done: ExportReport) -> str:
        return _sft_card(done, funnel, audit, tasks_per_split, license)

    return write_export(configs, out_dir, report, card=card, overwrite=overwrite, max_shard_bytes=max_shard_bytes)


def _sft_card(
    report: ExportReport,
    funnel: list[FunnelStep] | None,
    audit: dict[str, dict[str, int]],
    tasks_per_split: dict[str, int],
    license: str | None,
) -> str:
    head = cards.front_matter(
        pretty_name="qaflow SFT trajectories",
        configs=report.configs,
        digest=report.content_digest,
        splits=report.splits,
        license=license or cards.row_licences(report.counts),
        tags=["agentic-coding", "tool-use", "sft", "trajectories"],
    )
    sections = [
        ("Loading", _SFT_LOADING),
        ("Columns", cards.columns_table(SFT_FEATURES, SFT_COLUMNS)),
        ("Splits", cards.splits_section(report.splits, tasks_per_split)),
        ("Files", cards.files_list(report.files)),
        ("Sources and licences", cards.counts_tables(_pick(report.counts, "source", "licence"))),
        ("Audit", cards.audit_section(audit)),
        (
            "Counts",
            f"{report.rows} rows.\n\n" + cards.counts_tables({k: report.counts[k] for k in ("effort", "model")}),
        ),
    ]
    if funnel:
        steps = [(s.name, s.kept, s.removed) for s in funnel]
        steps.append(("export gate and guard", report.rows, len(report.removed)))
        sections.append(("Funnel", cards.table(("step", "kept", "removed"), steps)))
    sections.append(("Removed by the export", cards.removed_table(report.removed_by_reason)))
    if report.token_lengths is not None:
        sections.append(("Token lengths", cards.lengths_section(report.token_lengths)))
    if report.transforms or report.for_template:
        sections.append(("Template-safe transforms", _transforms_section(report)))
    if report.notes:
        sections.append(("Notes", "\n".join(f"- {n}" for n in report.notes)))
    if SHAREGPT_DIR in report.configs:
        sections.append(("ShareGPT variant (`sharegpt/`)", SHAREGPT_MAPPING))
    sections.append(("Provenance", cards.provenance_section(report.provenance)))
    intro = (
        "Agent trajectories on agentic-coding tasks, exported by qaflow: one row per attempt, in OpenAI chat "
        "format with tool calls, ready for a chat template with tool support. Only attempts on task versions "
        "the audit accepted and that the verifier graded are in it, unless the notes say otherwise."
    )
    return cards.render_card(head, "qaflow SFT trajectories", intro, sections)


def applied(transform: Transform, changed: int) -> AppliedTransform:
    """What `transform` did to an export: `changed` assistant turns, or tool definitions for a tools transform."""
    return AppliedTransform(
        name=transform.name,
        why=transform.why,
        turns_changed=0 if transform.on_tools else changed,
        tools_changed=changed if transform.on_tools else 0,
    )


def _transforms_section(report: ExportReport) -> str:
    head = (
        f"Chosen for the chat template `{report.for_template}`. "
        if report.for_template
        else "Asked for by name (`--transform`). "
    )
    if not report.transforms:
        return head + "It renders the export as it is: no transform ran."
    steps = [(f"`{t.name.value}`", t.turns_changed, t.tools_changed, t.why) for t in report.transforms]
    return (
        head
        + "Every session went through these, in this order, before it was written (`curation/export/transforms.py`); "
        "every call keeps its id, arguments and result, and `turns` still counts the agent's turns as collected.\n\n"
        + cards.table(("transform", "assistant turns changed", "tool definitions changed", "what and why"), steps)
    )


def _pick(counts: dict[str, dict[str, int]], *keys: str) -> dict[str, dict[str, int]]:
    return {k: counts[k] for k in keys if k in counts}


_SFT_LOADING = """
```python
from datasets import load_dataset

ds = load_dataset("OUT")  # a DatasetDict: train (and test, when the export made one)
row = ds["train"][0]
text = tokenizer.apply_chat_template(row["messages"], tools=row["tools"], tokenize=False)
```

Tool-call `arguments` and `tools` are `Json()` features (datasets >= 4.7): objects in Python, JSON text
(Arrow extension type `arrow.json` over strings) in the parquet files. With polars,
`pl.read_parquet(f).with_columns(pl.col("tools").list.eval(pl.element().ext.storage()))` gives the tools
as JSON strings.
"""
