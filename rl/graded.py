"""Which attempts were correctly graded, and so may enter references, rewards and advantages.

An attempt is graded when the agent ran to an end of its own (done, or a turn/token/time limit) and the
verifier gave a reward: a success, or a correctly graded failure. Everything else says nothing about the
policy and is left out, counted by reason:

- `llm_error`: the model call failed (stop reason `llm_error`); the environment was scored untouched;
- `error`: exit status `error`: the sandbox, the build, the setup or the reward file failed (infrastructure);
- `verifier_timeout`: the verifier did not finish;
- `no_verifier_result`: no reward recorded (an agent timeout the verifier never scored, or any other).

A failure scored 0 for any of these would get a negative advantage for something the policy did not do.

Timed out, then passed. An attempt the agent did not end by itself (a turn, token or wall-time limit: exit
status `agent_timeout`) is graded, and it is a failure for the effort reward (reward 0, no reference) even when
the verifier then passed the sandbox: the policy did not finish within its limits, and paying it would reward
running out the clock (a limit is part of what an effort allows). Such attempts are counted apart
(`timed_out_passed` in the round report, overall and per effort). `success_expr` is that rule, the one success
of references and rewards; it is `qaflow.rollouts.stats.passed_expr`, the pass of the pass tables.
"""

from __future__ import annotations

import polars as pl

from qaflow.models.trial import ExitStatus
from qaflow.rollouts.hacks import rewarded_hack
from qaflow.rollouts.stats import passed_expr

EXCLUSION_REASONS = ("llm_error", "error", "verifier_timeout", "no_verifier_result")


def exclusion_expr() -> pl.Expr:
    """The reason an attempt is left out (one of EXCLUSION_REASONS), null for a correctly graded one."""
    return (
        pl.when(pl.col("stop_reason") == "llm_error")
        .then(pl.lit("llm_error"))
        .when(pl.col("exit_status") == "error")
        .then(pl.lit("error"))
        .when(pl.col("exit_status") == "verifier_timeout")
        .then(pl.lit("verifier_timeout"))
        .when(pl.col("reward").is_null())
        .then(pl.lit("no_verifier_result"))
        .otherwise(pl.lit(None, dtype=pl.String))
    )


def success_expr() -> pl.Expr:
    """A success for the effort reward: exit status ok with full reward (a timed-out pass is a failure)."""
    return passed_expr()


def timed_out_passed_expr() -> pl.Expr:
    """A graded attempt that hit a limit (exit status agent_timeout) and that the verifier passed anyway."""
    return (pl.col("exit_status") == ExitStatus.AGENT_TIMEOUT.value) & pl.col("full_reward").cast(pl.Boolean).fill_null(
        False
    )


def split_graded(frame: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(graded attempts, left-out attempts with an `excluded` reason column)."""
    marked = frame.with_columns(exclusion_expr().alias("excluded"))
    graded = marked.filter(pl.col("excluded").is_null()).drop("excluded")
    return graded, marked.filter(pl.col("excluded").is_not_null())


def exclusion_counts(excluded: pl.DataFrame) -> dict[str, int]:
    """Reason -> attempts left out (every reason present, 0 when none)."""
    counts = dict.fromkeys(EXCLUSION_REASONS, 0)
    if excluded.height:
        for reason, n in excluded.group_by("excluded").len().iter_rows():
            counts[reason] = int(n)
    return counts


def zero_hacks(frame: pl.DataFrame) -> tuple[pl.DataFrame, int]:
    """`frame` with every rewarded attempt that changed a trust edge of its verifier (`qaflow.rollouts.hacks`)
    scored as the failure it is (reward 0, no full reward), and how many there were: a hack is graded, and
    learning from it must push the policy away from it, not leave it out."""
    hacked = [
        rewarded_hack(reward, meta, messages) is not None
        for reward, meta, messages in frame.select("reward", "meta_json", "messages").iter_rows()
    ]
    mask = pl.Series(hacked, dtype=pl.Boolean)
    if not mask.any():
        return frame, 0
    zeroed = frame.with_columns(
        pl.when(mask).then(pl.lit(0.0)).otherwise(pl.col("reward")).alias("reward"),
        pl.when(mask).then(pl.lit(False)).otherwise(pl.col("full_reward")).alias("full_reward"),
    )
    return zeroed, int(mask.sum())
