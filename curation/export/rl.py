"""RL export: one row per task version with its prompt, tools, grouping keys and per-effort stats.

From a rollout frame, the prompt is what the agent saw (the system and user messages before the
first assistant turn, the most common one over the version's rollouts) and the stats cover every
rollout of the version. From a pool, the prompt is built from the task's instruction (with an
optional system prompt) unless rollouts of that version are given too; their stats are added.

`round` is the latest collection round among the version's rollouts (0 without rollouts); stats
are over all rounds. A success is an attempt that exited `ok` with full reward.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl
from datasets import Features, Json, List, Value

from curation.export import card as cards
from curation.export.common import (
    DEFAULT_MAX_SHARD_BYTES,
    MESSAGE_FEATURE,
    ExportKind,
    ExportReport,
    NothingToExport,
    Provenance,
    RemovalReason,
    Removed,
    SplitSpec,
    conform_frame,
    dataset_from_rows,
    message_row,
    open_pool,
    prepare_out_dir,
    select_tasks,
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
    check_policy,
    check_task,
    export_facts,
    pool_facts,
    with_default_licence,
    with_sources,
)
from curation.export.guard import Rejected, parse_tools
from qaflow.agents.tool_specs import TOOLS
from qaflow.errors import TaskError
from qaflow.models.rollout import EFFORT_RANK
from qaflow.pool import Pool
from qaflow.rollouts.stats import passed_expr
from qaflow.task import Task

EFFORT_STATS_FEATURE = {
    "effort": Value("string"),
    "attempts": Value("int64"),
    "passes": Value("int64"),
    "pass_rate": Value("float64"),
    "median_thinking_tokens": Value("float64"),
}
RL_FEATURES = Features(
    {
        "task": Value("string"),
        "task_version": Value("string"),
        "source": Value("string"),
        "round": Value("int64"),
        "prompt": List(MESSAGE_FEATURE),
        "instruction": Value("string"),
        "tools": List(Json()),
        "attempts": Value("int64"),
        "passes": Value("int64"),
        "pass_rate": Value("float64"),
        "efforts": List(EFFORT_STATS_FEATURE),
        **FACT_FEATURES,
    }
)
RL_COLUMNS = {
    "task_version": "sha256 of the task's files; group completions of one prompt by it.",
    "round": "Latest collection round among the version's rollouts (0 without rollouts).",
    "prompt": "System and user messages the agent starts from (OpenAI chat format).",
    "instruction": "The task instruction (the last user message of the prompt).",
    "tools": "Tool definitions offered to the agent, decoded to dicts.",
    "attempts": "Rollouts of this version (all efforts).",
    "passes": "Rollouts that exited ok with full reward.",
    "pass_rate": "passes / attempts (null without rollouts).",
    "efforts": "Per effort, in order off < low < medium < xhigh: attempts, passes, pass_rate, and the median "
    "thinking tokens of the passes (null when none passed).",
    **FACT_COLUMNS,
}


def effort_stats(frame: pl.DataFrame) -> dict[str, list[dict[str, Any]]]:
    """Per task version, one stats entry per effort, efforts in increasing order."""
    if frame.is_empty():
        return {}
    passed = passed_expr()
    grouped = (
        frame.with_columns(passed.alias("passed"))
        .group_by("task_version", "effort")
        .agg(
            attempts=pl.len(),
            passes=pl.col("passed").sum(),
            median_thinking_tokens=pl.col("thinking_tokens").filter(pl.col("passed")).median(),
        )
    )
    out: dict[str, list[dict[str, Any]]] = {}
    for row in grouped.iter_rows(named=True):
        out.setdefault(row["task_version"], []).append(
            {
                "effort": row["effort"],
                "attempts": row["attempts"],
                "passes": row["passes"],
                "pass_rate": row["passes"] / row["attempts"],
                "median_thinking_tokens": row["median_thinking_tokens"],
            }
        )
    for entries in out.values():
        entries.sort(key=lambda e: (EFFORT_RANK.get(e["effort"], len(EFFORT_RANK)), e["effort"]))
    return out


def _leading_prompt(messages: list[dict[str, Any]] | None) -> list[dict[str, Any]] | None:
    """The system/user messages before the first assistant turn, when they hold a user message."""
    prompt = []
    for message in messages or []:
        if message.get("role") not in ("system", "user"):
            break
        prompt.append(message)
    return prompt if any(m.get("role") == "user" for m in prompt) else None


def rollout_prompts(frame: pl.DataFrame) -> dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]]:
    """Per task version, the most common prompt over its rollouts (the earliest on a tie) and its tools."""
    found: dict[str, Counter[str]] = {}
    first: dict[tuple[str, str], tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {}
    for row in frame.sort("created_at").iter_rows(named=True):
        prompt = None if row["text_repaired"] else _leading_prompt(row["messages"])
        if prompt is None:
            continue
        try:
            tools = parse_tools(row["tools_json"])
        except Rejected:
            continue
        prompt = [message_row(m) for m in prompt]
        key = json.dumps([[m["role"], m["content"]] for m in prompt] + [tools], sort_keys=True)
        found.setdefault(row["task_version"], Counter())[key] += 1
        first.setdefault((row["task_version"], key), (prompt, tools))
    return {version: first[(version, counts.most_common(1)[0][0])] for version, counts in found.items()}


def _stats_fields(stats: list[dict[str, Any]] | None) -> dict[str, Any]:
    attempts = sum(s["attempts"] for s in stats or [])
    passes = sum(s["passes"] for s in stats or [])
    return {
        "attempts": attempts,
        "passes": passes,
        "pass_rate": passes / attempts if attempts else None,
        "efforts": stats or [],
    }


def _instruction(prompt: list[dict[str, Any]]) -> str | None:
    return next((m["content"] for m in reversed(prompt) if m["role"] == "user"), None)


def graded_attempts(frame: pl.DataFrame, gate: GateOptions) -> tuple[pl.DataFrame, int]:
    """The rollouts that count for prompts and stats: correctly graded, of a model (not scripted); and how many
    were left out."""
    keep = [i for i, row in enumerate(frame.iter_rows(named=True)) if _counts(row, gate)]
    return frame[keep], frame.height - len(keep)


def _counts(row: dict[str, Any], gate: GateOptions) -> bool:
    try:
        check_policy(row, gate)
        check_graded(row, gate)
        check_hack(row, gate)
    except Rejected:
        return False
    return True


def rows_from_rollouts(
    frame: pl.DataFrame, facts: dict[str, TaskFacts] | None = None, gate: GateOptions | None = None
) -> tuple[list[dict[str, Any]], list[Removed]]:
    gate = gate or GateOptions()
    stats = effort_stats(frame)
    prompts = rollout_prompts(frame)
    keys = (
        frame.sort("created_at")
        .group_by("task_version", maintain_order=True)
        .agg(pl.col("task").first(), pl.col("source").first(), pl.col("round").max())
    )
    rows, removed = [], []
    for key in keys.iter_rows(named=True):
        version = key["task_version"]
        if version not in prompts:
            detail = "no rollout of this version has an intact prompt (system/user messages, then an assistant turn)"
            removed.append(Removed(id=version, task=key["task"], reason=RemovalReason.NO_PROMPT, detail=detail))
            continue
        try:
            task_columns = check_task(version, facts, gate)
        except Rejected as e:
            removed.append(Removed(id=version, task=key["task"], reason=e.reason, detail=e.detail))
            continue
        prompt, tools = prompts[version]
        rows.append(
            {
                **key,
                **task_columns,
                "prompt": prompt,
                "instruction": _instruction(prompt),
                "tools": tools,
                **_stats_fields(stats.get(version)),
            }
        )
    return rows, removed


def rows_from_pool(
    pool: Pool,
    status: Sequence[str] | None,
    rollouts: pl.DataFrame | None,
    system_prompt: str | None,
    tools: list[dict[str, Any]],
    facts: dict[str, TaskFacts],
) -> tuple[list[dict[str, Any]], list[Removed]]:
    stats = effort_stats(rollouts) if rollouts is not None else {}
    prompts = rollout_prompts(rollouts) if rollouts is not None else {}
    rounds = (
        dict(rollouts.group_by("task_version").agg(pl.col("round").max()).iter_rows()) if rollouts is not None else {}
    )
    rows, removed = [], []
    for entry in select_tasks(pool, status):
        folder = pool.root / entry.path
        try:
            task = Task.load(folder, require_solution=pool.config.require_solution)
        except (TaskError, OSError, UnicodeError) as e:
            reason = RemovalReason.MISSING_FOLDER if not folder.is_dir() else RemovalReason.TASK_UNLOADABLE
            removed.append(Removed(id=entry.version, task=entry.name, reason=reason, detail=str(e)))
            continue
        if task.version != entry.version:
            detail = f"{entry.path} now holds version {task.short_version}, not {entry.short}; run `qaflow pool scan`"
            removed.append(
                Removed(id=entry.version, task=entry.name, reason=RemovalReason.CHANGED_SINCE_SCAN, detail=detail)
            )
            continue
        if entry.version in prompts:
            prompt, task_tools = prompts[entry.version]
        else:
            messages = [{"role": "system", "content": system_prompt}] if system_prompt else []
            prompt = [message_row(m) for m in [*messages, {"role": "user", "content": task.instruction}]]
            task_tools = tools
        rows.append(
            {
                "task": entry.name,
                "task_version": entry.version,
                "source": entry.source,
                "round": rounds.get(entry.version, 0),
                "prompt": prompt,
                "instruction": task.instruction,
                "tools": task_tools,
                **_stats_fields(stats.get(entry.version)),
                **facts[entry.version].columns(),
            }
        )
    return rows, removed


def export_rl(
    source: pl.DataFrame | Pool | Path | str,
    out_dir: Path,
    *,
    rollouts: pl.DataFrame | None = None,
    pool: Pool | Path | str | None = None,
    status: Sequence[str] | None = ("accepted",),
    gate: GateOptions | None = None,
    licences: Mapping[str, str | None] | None = None,
    split: SplitSpec | None = None,
    system_prompt: str | None = None,
    tools: list[dict[str, Any]] | None = None,
    provenance: Provenance | None = None,
    license: str | None = None,
    sources: Mapping[str, str] | None = None,
    overwrite: bool = False,
    max_shard_bytes: int = DEFAULT_MAX_SHARD_BYTES,
) -> ExportReport:
    """Write the RL dataset of a rollout frame, or of a pool (with `rollouts` for stats), to `out_dir`.

    `sources` (task version -> source name, as a pipeline knows it) wins over the pool's source (task.toml's, else
    `local`); every licence is written as the Hub spells it (`apache-2.0`).

    With a pool, `status` selects tasks by the status of their current version (None: all) and
    `tools` (default: qaflow's harness tools) are offered where no rollout says otherwise. With a
    rollout frame, `pool` is the pool they ran on: only its accepted task versions are written unless
    `gate` says otherwise. Prompts and stats count correctly graded attempts of models only.

    Raises:
        ExportError: bad input (not a rollout frame, no pool ledger, unknown status, rollouts without their
            pool where the gate needs it), `out_dir` is a non-empty folder (without `overwrite`), or no row
            is left to export.
    """
    out_dir = Path(out_dir)
    gate = gate or GateOptions()
    prepare_out_dir(out_dir, overwrite=overwrite)
    notes = []
    if isinstance(source, pl.DataFrame):
        facts = export_facts(pool, gate, licences)
        frame, left_out = graded_attempts(conform_frame(source), gate)
        rows, removed = rows_from_rollouts(frame, facts, gate)
    else:
        graded, left_out = graded_attempts(conform_frame(rollouts), gate) if rollouts is not None else (None, 0)
        opened = open_pool(source)
        try:
            facts = pool_facts(opened, licences)
            rows, removed = rows_from_pool(
                opened, status, graded, system_prompt, tools if tools is not None else TOOLS, facts
            )
        finally:
            if opened is not source:
                opened.close()
    if left_out:
        notes.append(f"{left_out} attempts not correctly graded (or of a scripted policy) are left out of the stats")
    with_default_licence(rows, license)
    with_sources(rows, sources)
    if not rows:
        what = "no task matched" if not removed else f"all {len(removed)} task versions removed"
        raise NothingToExport(out_dir, f"nothing to export: {what}", removed)
    efforts: Counter[str] = Counter()
    for row in rows:
        for entry in row["efforts"]:
            efforts[entry["effort"]] += entry["attempts"]
    report = ExportReport(
        kind=ExportKind.RL,
        out_dir=out_dir,
        rows=len(rows),
        removed=removed,
        counts={
            "source": value_counts(rows, "source"),
            "licence": value_counts(rows, "licence"),
            "effort (attempts)": dict(sorted(efforts.items(), key=lambda kv: EFFORT_RANK.get(kv[0], 99))),
        },
        notes=notes,
        provenance=provenance or Provenance.for_api([]),
    )
    parts = split_rows(rows, split)
    configs = {"default": {name: dataset_from_rows(part, RL_FEATURES) for name, part in parts.items()}}
    audit = audit_summary(rows)

    def card(done: ExportReport) -> str:
        return _rl_card(done, audit, license)

    return write_export(configs, out_dir, report, card=card, overwrite=overwrite, max_shard_bytes=max_shard_bytes)


def _rl_card(report: ExportReport, audit: dict[str, dict[str, int]], license: str | None) -> str:
    head = cards.front_matter(
        pretty_name="qaflow RL prompts",
        configs=report.configs,
        digest=report.content_digest,
        splits=report.splits,
        license=license or cards.row_licences(report.counts),
        tags=["agentic-coding", "tool-use", "rl"],
    )
    loading = """
```python
from datasets import load_dataset

ds = load_dataset("OUT")  # a DatasetDict: train (and test, when the export made one)
row = ds["train"][0]
row["prompt"], row["tools"]  # conversational prompt (TRL's `prompt` column) and tool definitions
```

Group completions by `task_version` (one prompt); `efforts` gives each effort's pass rate and the
median thinking tokens of its successes, e.g. as references for effort-ordered rewards.
"""
    sections = [
        ("Loading", loading),
        ("Columns", cards.columns_table(RL_FEATURES, RL_COLUMNS)),
        ("Splits", cards.splits_section(report.splits, report.splits)),
        ("Files", cards.files_list(report.files)),
        ("Audit", cards.audit_section(audit)),
        ("Counts", f"{report.rows} task versions.\n\n" + cards.counts_tables(report.counts)),
        ("Removed", cards.removed_table(report.removed_by_reason)),
    ]
    if report.notes:
        sections.append(("Notes", "\n".join(f"- {n}" for n in report.notes)))
    sections.append(("Provenance", cards.provenance_section(report.provenance)))
    intro = "Agentic-coding task prompts for RL, exported by qaflow: one row per task version, with its grouping keys."
    return cards.render_card(head, "qaflow RL prompts", intro, sections)
