"""CLI: `qaflow filter ROLLOUTS` runs the rollout filters and saves what was kept, what was removed and why.

Exit status: 0 filtered (even if no row was kept), 2 bad input (a missing rollouts path, an
unusable config file, an output folder inside the input).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import polars as pl
import typer
from rich.markup import escape
from rich.table import Table

from curation.filters import FilterConfig, FilterConfigError, FilterResult, apply_filters
from qaflow.cli.options import JsonOpt
from qaflow.cli.output import console, emit_json, usage_error
from qaflow.models.frame import RolloutsError, read_rollouts

CONFIG_HELP = (
    "Filter config (YAML, TOML or JSON): a `rules` list; the funnel runs them in that order. Default: "
    f"the built-in rules {', '.join(r.step for r in FilterConfig().rules)}."
)
OUT_HELP = (
    "Output folder for kept.parquet, removed.parquet, funnel.json, funnel.png. Default: ROLLOUTS-filtered beside it."
)


def register(app: typer.Typer) -> None:
    app.command("filter")(filter_rollouts)


def filter_rollouts(
    rollouts: Annotated[Path, typer.Argument(help="A rollout parquet file or a folder of shards")],
    config_file: Annotated[Path | None, typer.Option("--config", "-c", help=CONFIG_HELP)] = None,
    out: Annotated[Path | None, typer.Option("--out", "-o", help=OUT_HELP)] = None,
    as_json: JsonOpt = None,
) -> None:
    """Filter rollouts through a funnel of rules; print and save the funnel (overall and by source and effort).

    Each rule sees only the rows kept by the rules before it; removed.parquet holds each removed row once, with why.

    Example: qaflow filter tasks_repo/.qaflow/rollouts --out filtered
    """
    if not rollouts.exists():
        usage_error(f"{rollouts}: no such rollout file or folder")
    try:
        config = FilterConfig.load(config_file) if config_file is not None else FilterConfig()
    except FilterConfigError as e:
        usage_error(str(e))
    if out is None:
        source = rollouts.resolve()
        out = source.with_name(f"{source.stem}-filtered")
    if rollouts.is_dir() and out.resolve().is_relative_to(rollouts.resolve()):
        usage_error(f"{out}: the output folder must not be inside {rollouts} (its parquet files would be read back)")

    try:
        frame = read_rollouts(rollouts)
    except RolloutsError as e:
        usage_error(str(e))
    if frame.is_empty():
        usage_error(f"{rollouts}: no rollouts to filter (no parquet shards with rows)")
    result = apply_filters(frame, config)
    paths = write_outputs(result, config, out, source=rollouts)
    summary = {
        **result.summary(),
        "top_reasons": top_reasons(result.removed),
        "files": {k: str(v) for k, v in paths.items()},
    }
    if as_json:
        emit_json(summary, as_json)
        return
    show(result, summary, rollouts)


def write_outputs(result: FilterResult, config: FilterConfig, out: Path, *, source: Path) -> dict[str, Path]:
    """kept.parquet, removed.parquet, funnel.json and funnel.png in `out`."""
    from curation.funnel_plot import draw_funnel

    out.mkdir(parents=True, exist_ok=True)
    paths = {name: out / name for name in ("kept.parquet", "removed.parquet", "funnel.json", "funnel.png")}
    result.kept.write_parquet(paths["kept.parquet"])
    result.removed.write_parquet(paths["removed.parquet"])
    document = {
        "rollouts": str(source),
        "config": config.model_dump(mode="json"),
        **result.summary(),
        "top_reasons": top_reasons(result.removed),
    }
    paths["funnel.json"].write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    draw_funnel(result.funnel, paths["funnel.png"], title=f"{source.name}: rollout filter funnel")
    return paths


def top_reasons(removed: pl.DataFrame) -> dict[str, dict[str, Any]]:
    """Per rule, its most frequent reason and how often it occurred."""
    counts = removed.group_by("rule", "reason").len().sort(["len", "reason"], descending=[True, False])
    first = counts.unique("rule", keep="first", maintain_order=True)
    return {row["rule"]: {"reason": row["reason"], "count": row["len"]} for row in first.iter_rows(named=True)}


def show(result: FilterResult, summary: dict[str, Any], rollouts: Path) -> None:
    out = console()
    reasons = summary["top_reasons"]
    table = Table(title=f"{rollouts} · filter funnel")
    table.add_column("step", justify="right")
    table.add_column("rule")
    for col in ("rows in", "removed", "rows out"):
        table.add_column(col, justify="right")
    table.add_column("most frequent reason")
    for row in result.funnel.iter_rows(named=True):
        top = reasons.get(row["rule"])
        example = f"{escape(top['reason'])} (×{top['count']})" if top else ""
        table.add_row(
            str(row["step"]),
            escape(row["rule"]),
            f"{row['rows_in']:,}",
            f"{row['removed']:,}",
            f"{row['rows_out']:,}",
            example,
        )
    out.print(table)

    wide = result.funnel_by_group.pivot(on="rule", index=["source", "effort"], values="removed", sort_columns=False)
    ends = result.funnel_by_group.group_by("source", "effort").agg(
        pl.col("rows_in").first().alias("in"), pl.col("rows_out").last().alias("out")
    )
    groups = ends.join(wide, on=["source", "effort"], how="left").sort("source", "effort")
    by_group = Table(title="by source and effort (rows removed per rule)")
    for col in groups.columns:
        by_group.add_column(escape(col), justify="left" if col in ("source", "effort") else "right")
    for values in groups.iter_rows():
        by_group.add_row(*(escape(v or "-") if isinstance(v, str) or v is None else f"{v:,}" for v in values))
    if groups.height:
        out.print(by_group)
    files = ", ".join(str(p) for p in summary["files"].values())
    out.print(f"kept {summary['rows_out']:,} of {summary['rows_in']:,} rollouts; wrote {escape(files)}")
