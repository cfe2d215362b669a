"""Dataset cards (README.md) for exports: YAML front matter the hub reads, then prose and tables for people."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import yaml
from datasets import Features, List, Value

from curation.export_common import Provenance

_SIZE_CATEGORIES = ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"))


def size_category(rows: int) -> str:
    return next((label for limit, label in _SIZE_CATEGORIES if rows < limit), "1M<n<10M")


def front_matter(
    *,
    pretty_name: str,
    configs: Mapping[str, str],
    features: Features,
    rows: int,
    license: str | None = None,
    tags: Sequence[str] = (),
) -> str:
    meta: dict[str, object] = {"pretty_name": pretty_name}
    if license:
        meta["license"] = license
    meta["tags"] = ["qaflow", *tags]
    meta["size_categories"] = [size_category(rows)]
    meta["configs"] = [
        {"config_name": name, "data_files": [{"split": "train", "path": pattern}]} for name, pattern in configs.items()
    ]
    # datasets writes hub YAML features with this (private) helper; without it the card just omits them.
    to_yaml = getattr(features, "_to_yaml_list", None)
    if to_yaml is not None:
        meta["dataset_info"] = {"features": to_yaml(), "splits": [{"name": "train", "num_examples": rows}]}
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
