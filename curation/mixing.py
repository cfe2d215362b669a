"""Mixing and upsampling: per-source weights, top-k sources, per-source caps, a target size, an eval split.

`mix_tasks(tasks, config)` works in this order:

1. Sources with weight 0 are dropped; with `top_k`, only the k sources of highest weight stay (ties: name).
2. Split (when `eval_fraction` > 0), before any upsampling: the distinct `original_id`s of the frame are ordered
   by a seeded hash and the first round(eval_fraction * count) go to eval, with every row carrying them (any
   source, augmented variants included, which keep their parent's original id). Eval rows are held out as
   they are: no weights, caps or copies. The rest is the train pool. So no task and no copy is in both splits.
3. Quotas for the train mix of `target` rows: each source's share is target * weight / (sum of weights); a
   source whose share exceeds its limit (its `cap`, and without `upsample` its number of tasks) gets its limit
   and the rest is shared again among the others by weight (water-filling). Shares are rounded by largest
   remainder (ties: higher weight, then name), so the quotas sum to the target and every source is within one
   task of its exact share. When every source is at its limit the mix is short of the target; the shortfall is
   recorded. Without a target every train task is taken once, up to the caps.
4. Each source's quota: at most its task count is drawn without replacement (seeded); a larger quota takes every
   task, then whole rounds of copies, then one more copy of a seeded draw of tasks. Copy k of task X has id
   `X_copyk` (k from 1), `copy_of` = X and `copy` = k (originals: null and 0).

Caps count rows, copies included. Rows of the train pool left out are removals (stage `mix`) with the source's
quota; dropped sources are removals too. `info` (the mix metadata) records all of the above.
"""

from __future__ import annotations

import hashlib
import math
import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl
from pydantic import BaseModel, ConfigDict, Field

from curation.sources import StageResult, removed_frame

STAGE = "mix"


class MixConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    weights: dict[str, float] = Field(default_factory=dict, description="Source -> weight (>= 0).")
    default_weight: float = Field(1.0, ge=0, description="Weight of sources not named in `weights`.")
    caps: dict[str, int] = Field(default_factory=dict, description="Source -> most rows in the mix (copies count).")
    top_k: int | None = Field(None, ge=1, description="Keep only the k sources of highest weight.")
    target: int | None = Field(None, ge=0, description="Rows of the train mix; None: every train task once.")
    upsample: bool = Field(True, description="Repeat tasks of short sources to meet their quota.")
    eval_fraction: float = Field(0.0, ge=0, lt=1, description="Share of original ids held out for eval.")
    seed: int = 0


@dataclass(frozen=True)
class MixResult(StageResult):
    """`kept` is the train mix; `eval` the held-out rows (None without a split); `info` the mix metadata."""

    eval: pl.DataFrame | None = None


def _draw_order(n: int, seed: int, source: str) -> np.ndarray:
    return np.random.default_rng([seed, zlib.crc32(source.encode())]).permutation(n)


def _group_key(original_id: str, seed: int) -> str:
    return hashlib.sha256(f"{seed}\0{original_id}".encode()).hexdigest()


def allocate(
    target: int, weights: dict[str, float], limits: dict[str, float]
) -> tuple[dict[str, int], dict[str, float]]:
    """Integer quotas summing to min(target, sum of limits) by water-filling and largest remainder, and the exact
    (fractional) shares they round."""
    active = {s for s, w in weights.items() if w > 0 and limits[s] > 0}
    exact: dict[str, float] = {s: 0.0 for s in weights}
    remaining = float(target)
    while active:
        total = sum(weights[s] for s in active)
        over = {s for s in active if remaining * weights[s] / total >= limits[s]}
        if not over:
            for s in active:
                exact[s] = remaining * weights[s] / total
            break
        for s in over:
            exact[s] = float(limits[s])
            remaining -= limits[s]
        active -= over
    quotas = {s: math.floor(v + 1e-9) for s, v in exact.items()}
    left = min(target, round(sum(exact.values()))) - sum(quotas.values())
    order = sorted(exact, key=lambda s: (-(exact[s] - quotas[s]), -weights[s], s))
    for s in order[: max(left, 0)]:
        quotas[s] += 1
    return quotas, exact


def mix_tasks(tasks: pl.DataFrame, config: MixConfig | None = None) -> MixResult:
    """The train mix (and eval split) of a task frame; see the module docstring.

    Long on purpose: the mix's steps (quotas, sampling, upsampling, the eval split) share the same frames and seed.
    """
    config = config or MixConfig()
    for source, weight in config.weights.items():
        if weight < 0:
            raise ValueError(f"weight of source {source!r} is negative ({weight})")
    removed: list[tuple[str, str, str]] = []
    sources = sorted(tasks["source"].unique().to_list())
    weights = {s: float(config.weights.get(s, config.default_weight)) for s in sources}
    dropped: dict[str, str] = {s: "weight 0" for s in sources if weights[s] == 0}
    ranked = sorted((s for s in sources if s not in dropped), key=lambda s: (-weights[s], s))
    if config.top_k is not None:
        for s in ranked[config.top_k :]:
            dropped[s] = f"not among the top {config.top_k} sources by weight"
    for s, why in dropped.items():
        for task_id in tasks.filter(pl.col("source") == s)["id"]:
            removed.append((task_id, STAGE, f"source {s} dropped: {why}"))
    frame = tasks.filter(~pl.col("source").is_in(list(dropped)))
    active = [s for s in sources if s not in dropped]

    split: dict[str, Any] | None = None
    eval_frame: pl.DataFrame | None = None
    if config.eval_fraction > 0:
        groups = sorted(frame["original_id"].unique().to_list(), key=lambda g: _group_key(g, config.seed))
        held = set(groups[: round(config.eval_fraction * len(groups))])
        in_eval = pl.col("original_id").is_in(sorted(held))
        eval_frame, frame = frame.filter(in_eval), frame.filter(~in_eval)
        split = {
            "eval_fraction": config.eval_fraction,
            "groups": len(groups),
            "eval_groups": len(held),
            "eval_rows": eval_frame.height,
            "eval_rows_by_source": {s: eval_frame.filter(pl.col("source") == s).height for s in active},
        }

    available = {s: frame.filter(pl.col("source") == s).height for s in active}
    limits: dict[str, float] = {}
    for s in active:
        limit = float(config.caps[s]) if s in config.caps else math.inf
        if not config.upsample or config.target is None:
            limit = min(limit, available[s])
        limits[s] = limit if available[s] else 0.0
    target = config.target if config.target is not None else int(sum(limits.values()))
    quotas, exact = allocate(target, {s: weights[s] for s in active}, limits)

    parts: list[pl.DataFrame] = []
    per_source: dict[str, dict[str, Any]] = {}
    total_weight = sum(weights[s] for s in active) or 1.0
    for s in active:
        pool = frame.filter(pl.col("source") == s).with_columns(
            pl.lit(None, dtype=pl.String).alias("copy_of"), pl.lit(0, dtype=pl.Int64).alias("copy")
        )
        n, quota = pool.height, quotas[s]
        order = _draw_order(n, config.seed, s) if n else np.empty(0, dtype=np.int64)
        copies = 0
        if quota <= n:
            chosen = sorted(order[:quota].tolist())
            parts.append(pool[chosen])
            left_out = pool.filter(~pl.int_range(pl.len()).is_in(chosen))
            for task_id in left_out["id"]:
                removed.append((task_id, STAGE, f"not sampled: source {s} quota {quota} of {n} tasks"))
        else:
            parts.append(pool)
            rounds, extra = divmod(quota - n, n)
            for k in range(1, rounds + 2):
                rows = list(range(n)) if k <= rounds else sorted(order[:extra].tolist())
                if not rows:
                    continue
                parts.append(
                    pool[rows].with_columns(
                        pl.col("id").alias("copy_of"),
                        (pl.col("id") + f"_copy{k}").alias("id"),
                        pl.lit(k, dtype=pl.Int64).alias("copy"),
                    )
                )
                copies += len(rows)
        per_source[s] = {
            "weight": weights[s],
            "share": weights[s] / total_weight,
            "available": n,
            "cap": config.caps.get(s),
            "exact_quota": round(exact[s], 6),
            "quota": quota,
            "originals": min(quota, n),
            "copies": copies,
            "at_limit": exact[s] >= limits[s] > 0,
        }
    empty = frame.clear().with_columns(
        pl.lit(None, dtype=pl.String).alias("copy_of"), pl.lit(0, dtype=pl.Int64).alias("copy")
    )
    mix = pl.concat(parts, how="vertical") if parts else empty
    info: dict[str, Any] = {
        "target": config.target,
        "rows": mix.height,
        "shortfall": max((config.target or 0) - mix.height, 0),
        "upsample": config.upsample,
        "seed": config.seed,
        "top_k": config.top_k,
        "sources": per_source,
        "dropped_sources": dropped,
        "split": split,
    }
    return MixResult(kept=mix, removed=removed_frame(removed), info=info, eval=eval_frame)
