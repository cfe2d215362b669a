"""Dataset cards (README.md) for exports: YAML front matter the hub reads, then prose and tables for people."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import yaml
from datasets import Features, List, Value

from curation.export.common import Provenance
from curation.licences import hub_licence
from qaflow.models.export import TokenLengths

_SIZE_CATEGORIES = ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"))


def size_category(rows: int) -> str:
    return next((label for limit, label in _SIZE_CATEGORIES if rows < limit), "1M<n<10M")


def front_matter(
    *,
    pretty_name: str,
    configs: Mapping[str, Mapping[str, str]],
    splits: Mapping[str, int],
    license: str | Sequence[str] | None = None,
    tags: Sequence[str] = (),
    digest: str | None = None,
) -> str:
    """YAML the hub (and `datasets.load_dataset(folder)`) reads: configs with their split files, licence, tags.

    Each config's `description` names the export's content `digest`: datasets keys the cache of a local folder by
    its YAML (configs and their file patterns), not by the files, so without it `load_dataset(OUT)` could return
    the rows of an earlier export in a folder of the same name."""
    meta: dict[str, object] = {"pretty_name": pretty_name}
    named = [license] if isinstance(license, str) else license or ()
    licences = sorted({hub for name in named if (hub := hub_licence(name))})
    if licences:
        meta["license"] = licences[0] if len(licences) == 1 else licences
    meta["tags"] = ["qaflow", *tags]
    meta["size_categories"] = [size_category(sum(splits.values()))]
    meta["configs"] = [
        {
            "config_name": name,
            "data_files": [{"split": split, "path": pattern} for split, pattern in files.items()],
            **({"description": f"qaflow export, content sha256 {digest}"} if digest else {}),
            **({"default": True} if name == "default" else {}),
        }
        for name, files in configs.items()
    ]
    # No `dataset_info` features: the parquet files carry them (schema metadata), and datasets 5.2 reading an
    # export with YAML features that hold Json() columns returns wrong values (nulls) for later columns.
    return "---\n" + yaml.safe_dump(meta, sort_keys=False, allow_unicode=True) + "---\n"


def table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    def cell(value: object) -> str:
        return str(value).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def type_name(feature: object) -> str:
    """A short type for people: `string`, `list<struct>`, `list<json>`..."""
    if isinstance(feature, Value):
        return feature.dtype
    if isinstance(feature, List):
        return f"list<{type_name(feature.feature)}>"
    if isinstance(feature, dict):
        return "struct"
    return type(feature).__name__.lower()


def columns_table(features: Features, descriptions: Mapping[str, str]) -> str:
    rows = [(f"`{name}`", f"`{type_name(f)}`", descriptions.get(name, "")) for name, f in features.items()]
    return table(("column", "type", "meaning"), rows)


def counts_tables(counts: Mapping[str, Mapping[str, int]]) -> str:
    parts = []
    for key, values in counts.items():
        parts.append(f"By {key}:\n\n" + table((key, "count"), [(f"`{k}`", v) for k, v in values.items()]))
    return "\n\n".join(parts)


def removed_table(removed_by_reason: Mapping[str, int]) -> str:
    if not removed_by_reason:
        return "No row was removed."
    return table(("reason", "rows"), [(f"`{k}`", v) for k, v in removed_by_reason.items()])


def splits_section(splits: Mapping[str, int], tasks: Mapping[str, int] | None = None) -> str:
    """Rows (and tasks) per split, and the rule that keeps a task out of both."""
    rows = [(f"`{name}`", n, (tasks or {}).get(name, "")) for name, n in splits.items()]
    text = table(("split", "rows", "tasks"), rows)
    if len(splits) < 2:
        return text + "\n\nNo test split was asked for (`--test-fraction` or `--test-tasks`)."
    return text + "\n\nSplit by task: every row of a task is in the same split, so no task is in both."


def row_licences(counts: Mapping[str, Mapping[str, int]]) -> list[str] | None:
    """The licences of an export's rows (from its `licence` counts), null ones left out; None when there is none."""
    return sorted(k for k in counts.get("licence", {}) if k != "None") or None


def files_list(files: Sequence[str]) -> str:
    return "\n".join(f"- `{f}`" for f in files)


def audit_section(summary: Mapping[str, Mapping[str, int]]) -> str:
    """Task versions by status and audit verdict (`curation.export.facts.audit_summary`)."""
    text = (
        "Task versions behind the rows, by their status in the pool's ledger and the verdict of their last "
        "audit (`clean`, or the error codes it found; `None`: not known to the pool).\n\n"
    )
    return text + counts_tables(summary)


def lengths_section(lengths: TokenLengths) -> str:
    """The sessions' token-length distribution under one tokenizer and the max_length TRL needs."""
    rows = [(lengths.sessions, lengths.min, f"{lengths.mean:.0f}", lengths.p50, lengths.p90, lengths.p99, lengths.max)]
    return (
        f"Tokens per session under `{lengths.tokenizer}`'s tokenizer (whole sessions with their tools, rendered by "
        "its training chat template).\n\n"
        + table(("sessions", "min", "mean", "p50", "p90", "p99", "max"), rows)
        + f"\n\n{lengths.advice()}: set `SFTConfig(max_length={lengths.needed_max_length})` (or larger)."
    )


def provenance_section(provenance: Provenance) -> str:
    lines = [
        f"- qaflow {provenance.qaflow_version}, datasets {provenance.datasets_version}",
        f"- created {provenance.created_at.isoformat(timespec='seconds')}",
        f"- command: `{provenance.command}`",
    ]
    lines += [f"- input: `{i}`" for i in provenance.inputs]
    return "\n".join(lines)


def render_card(head: str, title: str, intro: str, sections: Sequence[tuple[str, str]]) -> str:
    body = [head, f"# {title}", "", intro.strip(), ""]
    for heading, text in sections:
        body += [f"## {heading}", "", text.strip(), ""]
    return "\n".join(body)
