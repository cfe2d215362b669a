"""Recipe ranking: z-score every benchmark across the candidate recipes and rank by the mean z.

Input: one row per recipe with a recipe-name column and one numeric column per benchmark (CSV, parquet,
JSON/JSONL, or a polars frame); a long table with exactly the columns recipe, benchmark, score is pivoted.
Higher is better unless the benchmark is listed in `lower_is_better` (its z is negated).

For each benchmark, over the recipes that have a score (null or NaN = missing):
    z = (score - mean) / std, std the population standard deviation (ddof 0; `ddof=1` for the sample one).
A benchmark whose std is 0 (or undefined: fewer than ddof + 1 scores) gives every scored recipe z = 0; a
benchmark nobody scored is left out.

Missing scores (`missing`): `skip` averages a recipe's z over the benchmarks it has; `penalize` gives a missing
score the lowest z any recipe got on that benchmark, and averages over every benchmark. A recipe with no score
at all has no mean z and is ranked last.

Order: mean z descending; ties (mean z equal within `tie_tolerance`) are broken by more benchmarks scored,
then recipe name, and every recipe of a tie lists the others in `tied_with`. `rank` is the position 1..n.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Literal

import polars as pl
from pydantic import BaseModel, ConfigDict, Field

from qaflow.errors import QaflowError


class RecipeError(QaflowError):
    def __init__(self, where: str | Path, reason: str):
        self.where = str(where)
        self.reason = reason
        super().__init__(f"{where}: {reason}")


class RankConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    recipe_column: str = "recipe"
    benchmarks: list[str] | None = Field(None, description="Benchmark columns; None: every numeric column.")
    missing: Literal["skip", "penalize"] = "skip"
    ddof: int = Field(0, ge=0, le=1, description="0: population std; 1: sample std.")
    lower_is_better: list[str] = Field(default_factory=list)
    tie_tolerance: float = Field(1e-9, ge=0)


def load_scores(path: Path | str, recipe_column: str = "recipe") -> pl.DataFrame:
    """A score table from CSV, parquet, JSON or JSONL (long tables are pivoted to one row per recipe).

    Raises:
        RecipeError: unknown file type or unreadable file.
    """
    path = Path(path)
    readers: dict[str, Callable[[Path], pl.DataFrame]] = {
        ".csv": pl.read_csv, ".parquet": pl.read_parquet, ".json": pl.read_json, ".jsonl": pl.read_ndjson
    }  # fmt: skip
    reader = readers.get(path.suffix.lower())
    if reader is None:
        raise RecipeError(path, f"unknown score file type {path.suffix!r}; use one of {sorted(readers)}")
    try:
        frame = reader(path)
    except (OSError, pl.exceptions.PolarsError) as e:
        raise RecipeError(path, f"cannot read scores: {e}") from e
    if set(frame.columns) == {recipe_column, "benchmark", "score"}:
        frame = frame.pivot(on="benchmark", index=recipe_column, values="score", aggregate_function="first")
    return frame


def rank_recipes(scores: pl.DataFrame, config: RankConfig | None = None) -> pl.DataFrame:
    """The ranking table: rank, recipe, mean_z, benchmarks (scored), missing, tied_with, z_<benchmark>..., and
    the raw scores.

    Raises:
        RecipeError: no recipe column, duplicate recipe names, a named benchmark that is not a numeric column.
    """
    config = config or RankConfig()
    name = config.recipe_column
    if name not in scores.columns:
        raise RecipeError("scores", f"no recipe column {name!r} (columns: {scores.columns})")
    recipes = [str(r) for r in scores[name].to_list()]
    if len(set(recipes)) != len(recipes):
        duplicates = sorted({r for r in recipes if recipes.count(r) > 1})
        raise RecipeError("scores", f"recipes listed more than once: {duplicates}")
    numeric = [c for c, t in scores.schema.items() if c != name and t.is_numeric()]
    benchmarks = config.benchmarks if config.benchmarks is not None else numeric
    for b in benchmarks:
        if b not in numeric:
            raise RecipeError("scores", f"benchmark {b!r} is not a numeric column")

    columns: dict[str, list[float | None]] = {}
    used: list[str] = []
    for b in benchmarks:
        raw = [None if v is None or (isinstance(v, float) and math.isnan(v)) else float(v) for v in scores[b]]
        present = [v for v in raw if v is not None]
        if not present:
            continue
        used.append(b)
        mean = sum(present) / len(present)
        dof = len(present) - config.ddof
        std = math.sqrt(sum((v - mean) ** 2 for v in present) / dof) if dof > 0 else 0.0
        sign = -1.0 if b in config.lower_is_better else 1.0
        z = [None if v is None else (sign * (v - mean) / std if std > 0 else 0.0) for v in raw]
        if config.missing == "penalize":
            lowest = min(v for v in z if v is not None)
            z = [lowest if v is None else v for v in z]
        columns[b] = z

    rows = []
    for i, recipe in enumerate(recipes):
        scored = [b for b in used if scores[b][i] is not None and not _nan(scores[b][i])]
        zs = [score for b in used if (score := columns[b][i]) is not None]
        rows.append(
            {
                "recipe": recipe,
                "mean_z": sum(zs) / len(zs) if zs else None,
                "benchmarks": len(scored),
                "missing": ",".join(b for b in used if b not in scored),
                **{f"z_{b}": columns[b][i] for b in used},
                **{b: scores[b][i] for b in used},
            }
        )
    rows.sort(key=lambda r: (r["mean_z"] is None, -(r["mean_z"] or 0.0), -r["benchmarks"], r["recipe"]))
    for position, row in enumerate(rows, 1):
        row["rank"] = position
        row["tied_with"] = ",".join(
            o["recipe"]
            for o in rows
            if o is not row
            and o["mean_z"] is not None
            and row["mean_z"] is not None
            and abs(o["mean_z"] - row["mean_z"]) <= config.tie_tolerance
        )
    schema = {"rank": pl.Int64, "recipe": pl.String, "mean_z": pl.Float64, "benchmarks": pl.Int64}
    schema |= {"missing": pl.String, "tied_with": pl.String}
    schema |= {f"z_{b}": pl.Float64 for b in used} | {b: pl.Float64 for b in used}
    return pl.DataFrame(rows, schema=schema)


def _nan(value: object) -> bool:
    return isinstance(value, float) and math.isnan(value)


def save_ranking(ranking: pl.DataFrame, path: Path | str) -> None:
    """Write the ranking as CSV, parquet or JSON (by the file's suffix; anything else: CSV)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".parquet":
        ranking.write_parquet(path)
    elif path.suffix == ".json":
        path.write_text(json.dumps(ranking.to_dicts(), indent=2) + "\n", encoding="utf-8")
    else:
        ranking.write_csv(path)


def ties(ranking: pl.DataFrame) -> list[list[str]]:
    """Groups of tied recipes, in rank order."""
    groups: list[list[str]] = []
    seen: set[str] = set()
    for recipe, tied in zip(ranking["recipe"], ranking["tied_with"], strict=True):
        if tied and recipe not in seen:
            group = [recipe, *tied.split(",")]
            seen.update(group)
            groups.append(group)
    return groups
