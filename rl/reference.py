"""Reference thinking lengths per (task version, round, policy, effort).

From the same collection round and the same policy only: for every effort, the median thinking
tokens of its *successful* attempts, when at least `min_successes` exist, raised to `floor`. An
attempt at effort e is compared to the shortest reference among the efforts above e: `low` to the
shorter of medium's and xhigh's, `medium` to xhigh's, `xhigh` to none (correctness only); `off` to the
shortest of low's, medium's and xhigh's. Failed attempts never contribute.
"""

from __future__ import annotations

import polars as pl

from qaflow.models.rollout import EFFORT_RANK
from rl.graded import success_expr
from rl.reward import RewardConfig

GROUP = ("task_version", "round", "model")


def effort_medians(frame: pl.DataFrame, config: RewardConfig) -> pl.DataFrame:
    """Per group and effort: successes and, when there are enough, the floored median (`own_reference`)."""
    return (
        frame.filter(success_expr())
        .group_by(*GROUP, "effort")
        .agg(pl.len().alias("successes"), pl.col("thinking_tokens").median().alias("median_thinking"))
        .with_columns(
            pl.when(pl.col("successes") >= config.min_successes)
            .then(pl.max_horizontal(pl.col("median_thinking"), pl.lit(config.floor)))
            .otherwise(None)
            .alias("own_reference")
        )
    )


def reference_table(frame: pl.DataFrame, config: RewardConfig) -> pl.DataFrame:
    """One row per (group, effort) present in `frame`: `reference` (null = none) and `reference_effort`."""
    medians = effort_medians(frame, config).filter(pl.col("own_reference").is_not_null())
    groups = frame.select(*GROUP, "effort").unique()
    rows = []
    by_group: dict[tuple, list[tuple[int, str, float]]] = {}
    for row in medians.iter_rows(named=True):
        key = tuple(row[g] for g in GROUP)
        by_group.setdefault(key, []).append((EFFORT_RANK[row["effort"]], row["effort"], row["own_reference"]))
    for row in groups.iter_rows(named=True):
        key = tuple(row[g] for g in GROUP)
        rank = EFFORT_RANK[row["effort"]]
        higher = [(ref, eff) for r, eff, ref in by_group.get(key, []) if r > rank]
        best = min(higher) if higher else (None, None)
        rows.append({**row, "reference": best[0], "reference_effort": best[1]})
    schema: dict[str, pl.DataType | type[pl.DataType]] = {
        **{g: frame.schema[g] for g in GROUP},
        "effort": pl.String,
        "reference": pl.Float64,
        "reference_effort": pl.String,
    }
    return pl.DataFrame(rows, schema=schema)
