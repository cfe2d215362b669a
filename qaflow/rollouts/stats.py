"""Pass rates, pass@k and difficulty bands of rollouts, as polars frames.

pass@k is the unbiased estimator of Chen et al. (2021): with n attempts of which c passed,
pass@k = 1 - C(n - c, k) / C(n, k), defined for k <= n. A pass is full reward with exit status ok.
"""

from __future__ import annotations

from math import comb

import polars as pl

from qaflow.agents.harness import StopReason
from qaflow.models.rollout import EFFORT_RANK

BANDS: tuple[tuple[str, float], ...] = (
    ("impossible", 0.0),
    ("very_hard", 0.25),
    ("hard", 0.50),
    ("medium", 0.75),
    ("easy", 1.0),
)
"""(band, upper bound of the pass rate): impossible is exactly 0, easy is below 1, trivial is exactly 1."""


def difficulty_band(pass_rate: float) -> str:
    """impossible 0, very_hard <= 25%, hard <= 50%, medium <= 75%, easy < 100%, trivial 100%."""
    if pass_rate <= 0.0:
        return "impossible"
    if pass_rate >= 1.0:
        return "trivial"
    for band, upper in BANDS[1:4]:
        if pass_rate <= upper:
            return band
    return "easy"


def band_expr(rate: pl.Expr) -> pl.Expr:
    """`difficulty_band` as a polars expression."""
    return (
        pl.when(rate <= 0.0)
        .then(pl.lit("impossible"))
        .when(rate >= 1.0)
        .then(pl.lit("trivial"))
        .when(rate <= 0.25)
        .then(pl.lit("very_hard"))
        .when(rate <= 0.50)
        .then(pl.lit("hard"))
        .when(rate <= 0.75)
        .then(pl.lit("medium"))
        .otherwise(pl.lit("easy"))
    )


def pass_at_k(n: int, c: int, k: int) -> float:
    """Probability that at least one of k attempts drawn without replacement from n (c passing) passes."""
    if not 0 <= c <= n or k < 1 or k > n:
        raise ValueError(f"pass@k needs 0 <= c <= n and 1 <= k <= n (n={n}, c={c}, k={k})")
    if n - c < k:
        return 1.0
    return 1.0 - comb(n - c, k) / comb(n, k)


def passed_expr() -> pl.Expr:
    """A pass: exit status ok with full reward (a missing full_reward is not a pass). The one definition of
    success for stats, exports, checkpoint selection and RL."""
    return (pl.col("exit_status") == "ok") & pl.col("full_reward").cast(pl.Boolean).fill_null(False)


def settled_expr(frame: pl.DataFrame) -> pl.Expr:
    """An attempt that is a result: not ended by an infrastructure error (exit status `error`) nor by a failed
    model call (stop reason `llm_error`). The others are no evidence about the task; a rerun retries them.
    The ledger's `SETTLED` clause is the same rule in SQL; the export gate's `check_graded` applies it per row."""
    settled = pl.col("exit_status") != "error"
    if "stop_reason" in frame.columns:
        settled = settled & (pl.col("stop_reason").fill_null("") != StopReason.LLM_ERROR)
    return settled


def _counted(frame: pl.DataFrame) -> pl.DataFrame:
    return frame.with_columns(settled_expr(frame).alias("_settled")).with_columns(
        (passed_expr() & pl.col("_settled")).alias("_passed")
    )


def _rates(grouped: pl.DataFrame) -> pl.DataFrame:
    rate = pl.when(pl.col("attempts") > 0).then(pl.col("passes") / pl.col("attempts"))
    return grouped.with_columns(rate.alias("pass_rate")).with_columns(
        pl.when(pl.col("attempts") > 0).then(band_expr(pl.col("pass_rate"))).alias("band")
    )


def pass_table(frame: pl.DataFrame, ks: tuple[int, ...] = (1,)) -> pl.DataFrame:
    """One row per (task, model, effort): attempts (graded ones), passes, errors (attempts that ended in an
    infrastructure or model error: counted apart, never as failures), pass_rate and band (null with no graded
    attempt), pass@k columns (null when k > n), mean turns and median thinking tokens of passing attempts."""
    grouped = _rates(
        _counted(frame)
        .group_by("task", "model", "effort")
        .agg(
            pl.col("_settled").sum().alias("attempts"),
            pl.col("_passed").sum().alias("passes"),
            (~pl.col("_settled")).sum().alias("errors"),
            pl.col("turns").filter(pl.col("_settled")).mean().alias("mean_turns"),
            pl.col("thinking_tokens").filter(pl.col("_passed")).median().alias("median_thinking_passed"),
        )
    )
    for k in ks:

        def at_k(s: dict[str, int], k: int = k) -> float | None:
            return pass_at_k(s["attempts"], s["passes"], k) if k <= s["attempts"] else None

        grouped = grouped.with_columns(
            pl.struct("attempts", "passes").map_elements(at_k, return_dtype=pl.Float64).alias(f"pass@{k}")
        )
    return grouped.sort("task", "model", pl.col("effort").replace_strict(EFFORT_RANK, default=len(EFFORT_RANK)))


def task_bands(frame: pl.DataFrame) -> pl.DataFrame:
    """One row per task over all its attempts (every model and effort): attempts (graded), passes, errors
    (apart, as in `pass_table`), pass_rate, band."""
    counted = (
        _counted(frame)
        .group_by("task")
        .agg(
            pl.col("_settled").sum().alias("attempts"),
            pl.col("_passed").sum().alias("passes"),
            (~pl.col("_settled")).sum().alias("errors"),
        )
    )
    return _rates(counted).sort("task")
