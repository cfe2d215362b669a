"""Recipe ranking by mean z-score: a hand-computed table, ties, missing scores (skip / penalize), zero-std
benchmarks, lower-is-better, sample std, file formats and the CLI."""

from __future__ import annotations

import json
import math
from pathlib import Path

import polars as pl
import pytest
import typer
from typer.testing import CliRunner

from curation.cli.curate import register
from curation.recipes import RankConfig, RecipeError, load_scores, rank_recipes, save_ranking, ties
from qaflow.cli.grammar import RootGroup

Z = math.sqrt(1.5)  # z of the extremes of (1, 2, 3) with population std sqrt(2/3): 1 / sqrt(2/3)


def table(rows: dict[str, dict[str, float | None]]) -> pl.DataFrame:
    benchmarks = sorted({b for r in rows.values() for b in r})
    data = {"recipe": list(rows)} | {b: [rows[r].get(b) for r in rows] for b in benchmarks}
    return pl.DataFrame(data, schema={"recipe": pl.String} | {b: pl.Float64 for b in benchmarks})


def as_dict(ranking: pl.DataFrame, column: str) -> dict[str, object]:
    return dict(zip(ranking["recipe"], ranking[column], strict=True))


def test_hand_computed_table_with_a_tie():
    # b1: 1, 2, 3 -> mean 2, population std sqrt(2/3) -> z = -1.2247, 0, +1.2247
    # b2: 10, 30, 20 -> mean 20, std sqrt(200/3) -> z = -1.2247, +1.2247, 0
    # mean z: A -1.2247, B 0.6124, C 0.6124 (tie, broken by name)
    ranking = rank_recipes(table({"A": {"b1": 1, "b2": 10}, "C": {"b1": 3, "b2": 20}, "B": {"b1": 2, "b2": 30}}))
    assert ranking.columns == [
        "rank",
        "recipe",
        "mean_z",
        "benchmarks",
        "missing",
        "tied_with",
        "z_b1",
        "z_b2",
        "b1",
        "b2",
    ]
    assert ranking["recipe"].to_list() == ["B", "C", "A"]
    assert ranking["rank"].to_list() == [1, 2, 3]
    assert ranking["mean_z"].to_list() == pytest.approx([Z / 2, Z / 2, -Z])
    assert as_dict(ranking, "z_b1") == pytest.approx({"A": -Z, "B": 0.0, "C": Z})
    assert as_dict(ranking, "z_b2") == pytest.approx({"A": -Z, "B": Z, "C": 0.0})
    assert as_dict(ranking, "tied_with") == {"B": "C", "C": "B", "A": ""}
    assert ties(ranking) == [["B", "C"]]
    assert ranking.select(
        "recipe", pl.col("mean_z").round(6), pl.col("z_b1").round(6), pl.col("z_b2").round(6)
    ).rows() == [
        ("B", 0.612372, 0.0, 1.224745),
        ("C", 0.612372, 1.224745, 0.0),
        ("A", -1.224745, -1.224745, -1.224745),
    ]


def test_missing_scores_skip_or_penalize():
    scores = table(
        {"A": {"b1": 1, "b2": 10}, "B": {"b1": 2, "b2": 30}, "C": {"b1": 3, "b2": 20}, "D": {"b1": 4, "b2": None}}
    )
    # b1: 1..4, mean 2.5, population std sqrt(1.25): z = -1.341641, -0.447214, 0.447214, 1.341641
    # b2 (A, B, C only): z = -1.224745, 1.224745, 0
    z1 = [-1.5 / math.sqrt(1.25), -0.5 / math.sqrt(1.25), 0.5 / math.sqrt(1.25), 1.5 / math.sqrt(1.25)]
    skip = rank_recipes(scores, RankConfig(missing="skip"))
    assert skip["recipe"].to_list() == ["D", "B", "C", "A"]
    assert as_dict(skip, "mean_z") == pytest.approx(
        {"A": (z1[0] - Z) / 2, "B": (z1[1] + Z) / 2, "C": (z1[2] + 0) / 2, "D": z1[3]}
    )
    assert as_dict(skip, "benchmarks") == {"A": 2, "B": 2, "C": 2, "D": 1}
    assert as_dict(skip, "missing") == {"A": "", "B": "", "C": "", "D": "b2"}
    assert skip.filter(pl.col("recipe") == "D")["z_b2"].to_list() == [None]
    penalize = rank_recipes(scores, RankConfig(missing="penalize"))
    assert penalize["recipe"].to_list() == ["B", "C", "D", "A"]
    assert as_dict(penalize, "mean_z")["D"] == pytest.approx((z1[3] - Z) / 2)
    assert as_dict(penalize, "z_b2")["D"] == pytest.approx(-Z)
    assert round(as_dict(penalize, "mean_z")["D"], 6) == 0.058448


def test_zero_std_benchmark_contributes_zero_and_empty_recipe_is_last():
    scores = table(
        {
            "A": {"b1": 1, "b2": 10, "flat": 5},
            "B": {"b1": 2, "b2": 30, "flat": 5},
            "C": {"b1": 3, "b2": 20, "flat": 5},
            "E": {"b1": None, "b2": None, "flat": None},
        }
    )
    ranking = rank_recipes(scores)
    assert as_dict(ranking, "z_flat") == {"A": 0.0, "B": 0.0, "C": 0.0, "E": None}
    assert as_dict(ranking, "mean_z") == pytest.approx({"A": -2 * Z / 3, "B": Z / 3, "C": Z / 3, "E": None})
    assert ranking["recipe"].to_list() == ["B", "C", "A", "E"]
    assert as_dict(ranking, "missing")["E"] == "b1,b2,flat"
    # a benchmark nobody scored is left out
    with_empty = rank_recipes(scores.with_columns(pl.lit(None, dtype=pl.Float64).alias("none")))
    assert "z_none" not in with_empty.columns


def test_lower_is_better_and_sample_std():
    scores = table({"A": {"acc": 1, "latency": 3}, "B": {"acc": 2, "latency": 2}, "C": {"acc": 3, "latency": 1}})
    ranking = rank_recipes(scores, RankConfig(lower_is_better=["latency"]))
    assert as_dict(ranking, "z_latency") == pytest.approx({"A": -Z, "B": 0.0, "C": Z})
    assert ranking["recipe"].to_list() == ["C", "B", "A"]
    sample = rank_recipes(scores, RankConfig(ddof=1, benchmarks=["acc"]))
    assert as_dict(sample, "z_acc") == pytest.approx({"A": -1.0, "B": 0.0, "C": 1.0})  # sample std of 1, 2, 3 is 1
    assert "latency" not in sample.columns


def test_bad_tables_are_refused():
    with pytest.raises(RecipeError, match="more than once"):
        rank_recipes(pl.DataFrame({"recipe": ["a", "a"], "b": [1.0, 2.0]}))
    with pytest.raises(RecipeError, match="no recipe column"):
        rank_recipes(pl.DataFrame({"name": ["a"], "b": [1.0]}))
    with pytest.raises(RecipeError, match="not a numeric column"):
        rank_recipes(pl.DataFrame({"recipe": ["a"], "b": [1.0]}), RankConfig(benchmarks=["c"]))


def test_file_formats_long_tables_and_saving(tmp_path: Path):
    wide = table({"A": {"b1": 1, "b2": 10}, "B": {"b1": 2, "b2": 30}, "C": {"b1": 3, "b2": 20}})
    expected = rank_recipes(wide)
    wide.write_csv(tmp_path / "s.csv")
    wide.write_parquet(tmp_path / "s.parquet")
    long = wide.unpivot(index="recipe", variable_name="benchmark", value_name="score")
    long.write_ndjson(tmp_path / "s.jsonl")
    for name in ("s.csv", "s.parquet", "s.jsonl"):
        assert rank_recipes(load_scores(tmp_path / name)).equals(expected)
    for name in ("r.csv", "r.parquet", "r.json"):
        save_ranking(expected, tmp_path / name)
    assert pl.read_csv(tmp_path / "r.csv")["recipe"].to_list() == ["B", "C", "A"]
    assert pl.read_parquet(tmp_path / "r.parquet").equals(expected)
    with pytest.raises(RecipeError, match="unknown score file type"):
        load_scores(tmp_path / "s.txt")


def test_cli_prints_and_saves(tmp_path: Path):
    table({"A": {"b1": 1, "b2": 10}, "B": {"b1": 2, "b2": 30}, "C": {"b1": 3, "b2": 20}}).write_csv(tmp_path / "s.csv")
    app = typer.Typer(cls=RootGroup)  # qaflow's grammar: --json [FILE|-]
    register(app)
    runner = CliRunner()
    result = runner.invoke(app, ["rank-recipes", str(tmp_path / "s.csv"), "--out", str(tmp_path / "rank.csv")])
    assert result.exit_code == 0, result.output
    assert "tie: B, C" in result.output
    assert pl.read_csv(tmp_path / "rank.csv")["recipe"].to_list() == ["B", "C", "A"]
    as_json = runner.invoke(app, ["rank-recipes", str(tmp_path / "s.csv"), "--json"])
    assert [r["recipe"] for r in json.loads(as_json.output)] == ["B", "C", "A"]
    bad = runner.invoke(app, ["rank-recipes", str(tmp_path / "s.csv"), "--missing", "drop"])
    assert bad.exit_code == 2
