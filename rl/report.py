"""Effort-order report: does more reasoning effort mean more thinking and more success?

Per effort (off < low < medium < xhigh): attempts, success rate (exit status ok and full reward),
mean thinking tokens over all attempts and over successes only, mean output tokens (the sum of the
turns' completion tokens), and mean wall time (the agent's timing, else the total).

An inversion is an ordered pair of efforts (lower, higher), both present, where the lower one does
more of something than the higher one:

- `thinking`: the lower effort's mean thinking tokens exceed the higher's. Compared on all attempts by
  default (`on="all"`: what the effort costs, failures included), or on successes only
  (`on="successes"`: what a solution costs at that effort; a side without successes is not compared).
- `success`: the lower effort's success rate exceeds the higher's.

Every pair is checked, not only neighbours (off thinking more than xhigh is flagged too), overall and per
task (per-task means, only where both efforts have attempts, or successes with `on="successes"`).
`tolerance` is relative: a pair is inverted when lower > higher * (1 + tolerance); 0 flags any excess.

Only correctly graded attempts are counted, by the rule a round uses (`rl.graded.split_graded`): failed model
calls, infrastructure errors, verifier timeouts and attempts without a verifier result are left out and counted
by reason (`excluded`). `round=N` (`qaflow rl report --round N`) takes that collection round's attempts only;
otherwise every round is counted together and `rounds` lists them.
"""

from __future__ import annotations

from itertools import combinations
from pathlib import Path
from typing import Any, Literal

import polars as pl
from pydantic import BaseModel, Field

from qaflow.models.rollout import EFFORT_RANK
from qaflow.rollouts.stats import passed_expr
from rl.graded import exclusion_counts, split_graded

InversionKind = Literal["thinking", "success"]
OVERALL = "(overall)"


class EffortRow(BaseModel):
    effort: str
    attempts: int
    successes: int
    success_rate: float
    mean_thinking: float
    mean_thinking_successes: float | None = Field(description="None when the effort has no success.")
    mean_output_tokens: float
    mean_wall_s: float | None = Field(description="None when no attempt recorded a timing.")


EFFORT_TABLE_SCHEMA = {
    "effort": pl.String,
    "attempts": pl.Int64,
    "successes": pl.Int64,
    "success_rate": pl.Float64,
    "mean_thinking": pl.Float64,
    "mean_thinking_successes": pl.Float64,
    "mean_output_tokens": pl.Float64,
    "mean_wall_s": pl.Float64,
}


class Inversion(BaseModel):
    kind: InversionKind
    scope: str = Field(description=f"{OVERALL!r}, or the task whose per-task means are inverted.")
    lower: str
    higher: str
    lower_value: float
    higher_value: float


class PairCount(BaseModel):
    kind: InversionKind
    lower: str
    higher: str
    overall: bool = Field(description="Inverted over all tasks together.")
    tasks_compared: int = Field(description="Tasks where both efforts have a value to compare.")
    tasks_inverted: int


class EffortReport(BaseModel):
    on: Literal["all", "successes"] = "all"
    tolerance: float = 0.0
    models: list[str] = Field(default_factory=list)
    tasks: int = 0
    efforts: list[EffortRow] = Field(default_factory=list)
    inversions: list[Inversion] = Field(default_factory=list)
    pairs: list[PairCount] = Field(default_factory=list)
    rounds: list[int] = Field(default_factory=list, description="The collection rounds counted.")
    errors: int = 0
    """Attempts left out: not correctly graded (`rl.graded`: a failed model call, an infrastructure error, a
    verifier timeout, no verifier result), so they say nothing about the effort."""
    excluded: dict[str, int] = Field(
        default_factory=dict, description="Attempts left out by reason (rl.graded.EXCLUSION_REASONS)."
    )

    def table(self) -> pl.DataFrame:
        """The per-effort table, one row per effort in effort order."""
        return pl.DataFrame([r.model_dump() for r in self.efforts], schema=EFFORT_TABLE_SCHEMA)

    def inversion_frame(self) -> pl.DataFrame:
        schema = {
            "kind": pl.String,
            "scope": pl.String,
            "lower": pl.String,
            "higher": pl.String,
            "lower_value": pl.Float64,
            "higher_value": pl.Float64,
        }
        return pl.DataFrame([i.model_dump() for i in self.inversions], schema=schema)

    def overall_inversions(self, kind: InversionKind | None = None) -> list[Inversion]:
        return [i for i in self.inversions if i.scope == OVERALL and (kind is None or i.kind == kind)]

    def task_inversions(self, kind: InversionKind | None = None) -> list[Inversion]:
        return [i for i in self.inversions if i.scope != OVERALL and (kind is None or i.kind == kind)]


def _prepared(frame: pl.DataFrame) -> pl.DataFrame:
    timing = pl.col("timings_json").fill_null("{}")
    wall = pl.coalesce(
        timing.str.json_path_match("$.agent").cast(pl.Float64, strict=False),
        timing.str.json_path_match("$.total").cast(pl.Float64, strict=False),
    )
    output = pl.col("usage").list.eval(pl.element().struct.field("completion_tokens")).list.sum().fill_null(0)
    return frame.select(
        "task",
        "model",
        "effort",
        passed_expr().alias("success"),
        pl.col("thinking_tokens").cast(pl.Float64).alias("thinking"),
        output.cast(pl.Float64).alias("output_tokens"),
        wall.alias("wall_s"),
    )


def _means(rows: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    return rows.group_by(by).agg(
        pl.len().alias("attempts"),
        pl.col("success").sum().alias("successes"),
        pl.col("success").mean().alias("success_rate"),
        pl.col("thinking").mean().alias("mean_thinking"),
        pl.col("thinking").filter(pl.col("success")).mean().alias("mean_thinking_successes"),
        pl.col("output_tokens").mean().alias("mean_output_tokens"),
        pl.col("wall_s").mean().alias("mean_wall_s"),
    )


def _inverted(lower: float | None, higher: float | None, tolerance: float) -> bool:
    if lower is None or higher is None:
        return False
    return lower > higher * (1.0 + tolerance)


def effort_report(
    frame: pl.DataFrame,
    *,
    on: Literal["all", "successes"] = "all",
    tolerance: float = 0.0,
    round: int | None = None,
) -> EffortReport:
    """The effort-order report of a rollout frame (ROLLOUT_SCHEMA); see the module docstring for the rules.
    `round`: only that collection round's attempts."""
    if tolerance < 0:
        raise ValueError(f"tolerance must be >= 0, got {tolerance}")
    frame = frame.filter(pl.col("effort").is_in(list(EFFORT_RANK)))
    if round is not None:
        frame = frame.filter(pl.col("round") == round)
    graded, left_out = split_graded(frame)
    rows = _prepared(graded)
    thinking_col = "mean_thinking" if on == "all" else "mean_thinking_successes"
    columns = {"thinking": thinking_col, "success": "success_rate"}

    overall = _means(rows, ["effort"]).sort(pl.col("effort").replace_strict(EFFORT_RANK))
    per_task = _means(rows, ["task", "effort"])
    report = EffortReport(
        on=on,
        tolerance=tolerance,
        models=sorted(rows["model"].unique().to_list()),
        tasks=rows["task"].n_unique(),
        efforts=[EffortRow(**r) for r in overall.iter_rows(named=True)],
        rounds=sorted(frame["round"].unique().to_list()),
        errors=left_out.height,
        excluded=exclusion_counts(left_out),
    )
    by_effort = {r.effort: r.model_dump() for r in report.efforts}
    task_values: dict[tuple[str, str], dict[str, Any]] = {
        (r["task"], r["effort"]): r for r in per_task.iter_rows(named=True)
    }
    tasks = sorted({t for t, _ in task_values})
    for kind, col in columns.items():
        for lower, higher in combinations(list(by_effort), 2):
            lo, hi = by_effort[lower][col], by_effort[higher][col]
            flagged = _inverted(lo, hi, tolerance)
            if flagged:
                report.inversions.append(
                    Inversion(kind=kind, scope=OVERALL, lower=lower, higher=higher, lower_value=lo, higher_value=hi)
                )
            compared = inverted = 0
            for task in tasks:
                a, b = task_values.get((task, lower)), task_values.get((task, higher))
                if a is None or b is None or a[col] is None or b[col] is None:
                    continue
                compared += 1
                if _inverted(a[col], b[col], tolerance):
                    inverted += 1
                    report.inversions.append(
                        Inversion(
                            kind=kind, scope=task, lower=lower, higher=higher, lower_value=a[col], higher_value=b[col]
                        )
                    )
            report.pairs.append(
                PairCount(
                    kind=kind,
                    lower=lower,
                    higher=higher,
                    overall=flagged,
                    tasks_compared=compared,
                    tasks_inverted=inverted,
                )
            )
    return report


def plot_effort_report(report: EffortReport, path: Path) -> Path:
    """A PNG: success rate and mean thinking per effort (efforts in an overall inversion in red), and the number
    of tasks with an inversion per effort pair."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    efforts = [r.effort for r in report.efforts]
    x = list(range(len(efforts)))
    involved = {
        kind: {e for i in report.overall_inversions(kind) for e in (i.lower, i.higher)}
        for kind in ("thinking", "success")
    }

    def colours(kind: str, base: str) -> list[str]:
        return ["tab:red" if e in involved[kind] else base for e in efforts]

    fig, axes = plt.subplots(1, 3, figsize=(15, 4.5))
    ax = axes[0]
    ax.bar(x, [r.success_rate for r in report.efforts], color=colours("success", "tab:green"))
    ax.set_xticks(x, efforts)
    ax.set_ylim(0, 1.05)
    ax.set_title("success rate")

    ax = axes[1]
    width = 0.4
    all_values = [r.mean_thinking for r in report.efforts]
    succ_values = [r.mean_thinking_successes or 0.0 for r in report.efforts]
    flagged_all = colours("thinking", "tab:blue") if report.on == "all" else ["tab:blue"] * len(efforts)
    flagged_succ = colours("thinking", "tab:cyan") if report.on == "successes" else ["tab:cyan"] * len(efforts)
    ax.bar([i - width / 2 for i in x], all_values, width, color=flagged_all, label="all attempts")
    ax.bar([i + width / 2 for i in x], succ_values, width, color=flagged_succ, label="successes")
    ax.set_xticks(x, efforts)
    ax.set_title(f"mean thinking tokens (inversions on {report.on})")
    ax.legend()

    ax = axes[2]
    pairs = [p for p in report.pairs if p.kind == "thinking"]
    labels = [f"{p.lower}>{p.higher}" for p in pairs]
    success_pairs = {(p.lower, p.higher): p for p in report.pairs if p.kind == "success"}
    px = list(range(len(pairs)))
    ax.bar([i - width / 2 for i in px], [p.tasks_inverted for p in pairs], width, color="tab:orange", label="thinking")
    ax.bar(
        [i + width / 2 for i in px],
        [success_pairs[(p.lower, p.higher)].tasks_inverted for p in pairs],
        width,
        color="tab:purple",
        label="success",
    )
    ax.set_xticks(px, labels, rotation=30, ha="right")
    ax.set_title("tasks with an inversion, per pair")
    ax.legend()

    overall = report.overall_inversions()
    note = "overall inversions: " + (
        ", ".join(f"{i.kind} {i.lower}>{i.higher}" for i in overall) if overall else "none"
    )
    fig.suptitle(note, color="tab:red" if overall else "black")
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
