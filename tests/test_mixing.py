"""Mixing: weights and caps honoured to within one task, upsampling hits the target exactly with `_copyN` ids,
top-k and zero weights drop sources, eval splits by original id never share a task or a copy with train."""

from __future__ import annotations

import json
import random
from pathlib import Path

import polars as pl
import pytest
import typer
from typer.testing import CliRunner

from curation.cli.curate import register
from curation.mixing import MixConfig, allocate, mix_tasks
from curation.sources import SourcedTask, tasks_frame, write_tasks


def sources(**sizes: int) -> pl.DataFrame:
    return tasks_frame(
        SourcedTask(source=s, original_id=f"{s}{i}", name=f"{s}{i}", instruction=f"task {s} {i}", version=f"{s}{i}")
        for s, n in sizes.items()
        for i in range(n)
    )


def counts(frame: pl.DataFrame) -> dict[str, int]:
    return dict(frame.group_by("source").len().sort("source").iter_rows())


def test_weights_are_honoured_to_within_one_task():
    frame = sources(a=100, b=50, c=40)
    result = mix_tasks(frame, MixConfig(target=101, weights={"a": 3, "b": 1, "c": 1}))
    assert result.kept.height == 101
    assert counts(result.kept) == {"a": 61, "b": 20, "c": 20}
    for s, share in {"a": 60.6, "b": 20.2, "c": 20.2}.items():
        assert abs(counts(result.kept)[s] - share) < 1
        assert result.info["sources"][s]["exact_quota"] == pytest.approx(share)
    assert result.kept["id"].n_unique() == 101 and result.kept["copy"].sum() == 0
    assert result.removed.height == frame.height - 101
    assert "not sampled: source a quota 61 of 100 tasks" in result.removed["reason"].to_list()


def test_caps_bind_and_the_rest_is_shared_by_weight():
    result = mix_tasks(
        sources(a=100, b=50, c=40), MixConfig(target=100, weights={"a": 3, "b": 1, "c": 1}, caps={"b": 10})
    )
    got = counts(result.kept)
    assert got["b"] == 10 and result.info["sources"]["b"]["at_limit"]
    assert got["a"] + got["c"] == 90 and abs(got["a"] - 67.5) < 1 and abs(got["c"] - 22.5) < 1
    # caps count copies too: an upsampled source stops at its cap
    capped = mix_tasks(sources(a=10, b=3), MixConfig(target=40, caps={"b": 7}))
    assert counts(capped.kept) == {"a": 33, "b": 7}


def test_upsampling_reaches_the_target_exactly_with_copy_ids():
    result = mix_tasks(sources(a=20, b=5), MixConfig(target=60))
    assert result.kept.height == 60 and counts(result.kept) == {"a": 30, "b": 30}
    b = result.kept.filter(pl.col("source") == "b")
    # 5 originals, 5 whole rounds of copies (_copy1.._copy5) = 30
    assert sorted(b["copy"].value_counts().iter_rows()) == [(k, 5) for k in range(6)]
    assert set(b.filter(pl.col("copy") == 3)["id"]) == {f"b:b{i}_copy3" for i in range(5)}
    assert (
        b.filter(pl.col("copy") > 0)
        .select((pl.col("copy_of") + "_copy" + pl.col("copy").cast(pl.String)) == pl.col("id"))
        .to_series()
        .all()
    )
    a = result.kept.filter(pl.col("source") == "a")
    assert a["copy"].sum() == 10 and a.filter(pl.col("copy") > 0)["copy_of"].n_unique() == 10
    assert result.kept["id"].n_unique() == 60
    b_info = result.info["sources"]["b"]
    assert (b_info["originals"], b_info["copies"], b_info["quota"], b_info["available"]) == (5, 25, 30, 5)


def test_without_upsampling_the_shortfall_is_recorded():
    result = mix_tasks(sources(a=20, b=5), MixConfig(target=60, upsample=False))
    assert counts(result.kept) == {"a": 20, "b": 5}
    assert result.info["shortfall"] == 35 and result.kept["copy"].sum() == 0
    # with one short source the other makes up the difference
    result = mix_tasks(sources(a=50, b=5), MixConfig(target=40, upsample=False))
    assert counts(result.kept) == {"a": 35, "b": 5} and result.info["shortfall"] == 0


def test_top_k_and_zero_weights_drop_sources():
    frame = sources(a=5, b=5, c=5, d=5)
    result = mix_tasks(frame, MixConfig(weights={"a": 1, "b": 3, "c": 2, "d": 0}, top_k=2))
    assert counts(result.kept) == {"b": 5, "c": 5}
    reasons = dict(result.removed.group_by("reason").len().iter_rows())
    assert reasons == {
        "source a dropped: not among the top 2 sources by weight": 5,
        "source d dropped: weight 0": 5,
    }
    assert result.info["dropped_sources"] == {"d": "weight 0", "a": "not among the top 2 sources by weight"}


def test_eval_split_by_original_id_never_crosses_with_copies():
    frame = sources(a=30, b=4)
    # the same original task in two sources, and an augmented variant sharing its parent's original id
    frame = pl.concat(
        [
            frame,
            frame.filter(pl.col("id") == "a:a3").with_columns(
                pl.lit("mirror").alias("source"), pl.lit("mirror:a3").alias("id")
            ),
            frame.filter(pl.col("id") == "a:a3").with_columns(pl.lit("a:a3~terse").alias("id")),
        ]
    )
    for seed in range(8):
        result = mix_tasks(frame, MixConfig(target=80, eval_fraction=0.25, seed=seed))
        assert result.eval is not None and result.kept.height == 80
        train_groups = set(result.kept["original_id"])
        eval_groups = set(result.eval["original_id"])
        assert not train_groups & eval_groups
        assert len(eval_groups) == round(0.25 * frame["original_id"].n_unique())
        assert "copy" not in result.eval.columns
        originals = set(result.kept.filter(pl.col("copy") > 0)["copy_of"])
        assert originals <= set(result.kept.filter(pl.col("copy") == 0)["id"])
        assert not set(result.eval["id"]) & set(result.kept["id"])
        if "a3" in eval_groups:
            assert {"a:a3", "mirror:a3", "a:a3~terse"} <= set(result.eval["id"])
    assert result.info["split"]["eval_groups"] == len(eval_groups)


def test_same_seed_same_mix_and_metadata():
    frame = sources(a=40, b=7)
    config = MixConfig(target=50, weights={"a": 2}, seed=3)
    one, two = mix_tasks(frame, config), mix_tasks(frame, config)
    assert one.kept.equals(two.kept) and one.info == two.info
    other = mix_tasks(frame, config.model_copy(update={"seed": 4}))
    assert not other.kept.equals(one.kept)
    assert set(one.info) >= {"target", "rows", "shortfall", "upsample", "seed", "sources", "dropped_sources", "split"}


def test_allocate_rounds_by_largest_remainder():
    quotas, exact = allocate(10, {"x": 1, "y": 1, "z": 1}, {"x": float("inf"), "y": float("inf"), "z": float("inf")})
    assert sum(quotas.values()) == 10 and sorted(quotas.values()) == [3, 3, 4]
    assert quotas == {"x": 4, "y": 3, "z": 3}  # equal remainders and weights: by name
    assert exact == pytest.approx({"x": 10 / 3, "y": 10 / 3, "z": 10 / 3})


def test_random_mixes_stay_within_one_task_of_their_shares_and_under_caps():
    rng = random.Random(7)
    for _ in range(40):
        sizes = {s: rng.randint(1, 40) for s in "abcde"[: rng.randint(2, 5)]}
        weights = {s: rng.choice([0.5, 1, 2, 3.3]) for s in sizes}
        caps = {s: rng.randint(5, 60) for s in sizes if rng.random() < 0.4}
        target = rng.randint(1, 150)
        result = mix_tasks(sources(**sizes), MixConfig(target=target, weights=weights, caps=caps))
        got = counts(result.kept)
        assert result.kept.height == min(target, sum(caps.get(s, 10**9) for s in sizes))
        for s, row in result.info["sources"].items():
            assert got.get(s, 0) == row["quota"] <= caps.get(s, 10**9)
            assert abs(row["quota"] - row["exact_quota"]) < 1
            uncapped = [x for x in sizes if not result.info["sources"][x]["at_limit"]]
            if s in uncapped and result.info["shortfall"] == 0:
                rest = target - sum(result.info["sources"][x]["quota"] for x in sizes if x not in uncapped)
                share = rest * weights[s] / sum(weights[x] for x in uncapped)
                assert abs(row["quota"] - share) < 1


def test_mix_cli_writes_the_metadata(tmp_path: Path):
    frame = sources(a=20, b=5)
    write_tasks(frame, tmp_path / "tasks.parquet")
    app = typer.Typer()
    register(app)
    out, eval_out = tmp_path / "mix.parquet", tmp_path / "eval.parquet"
    args = ["curate", "mix", str(tmp_path / "tasks.parquet"), "--target", "40", "--weight", "b=3", "--cap", "a=8"]
    result = CliRunner().invoke(app, [*args, "--eval-fraction", "0.2", "--out", str(out), "--eval-out", str(eval_out)])
    assert result.exit_code == 0, result.output
    mix = pl.read_parquet(out)
    assert mix.height == 40 and pl.read_parquet(eval_out).height == 5
    stored = json.loads(pl.read_parquet_metadata(out)["qaflow.mix"])
    assert stored == json.loads((tmp_path / "mix.mix.json").read_text())
    assert stored["sources"]["a"]["quota"] == 8 and stored["split"]["eval_groups"] == 5
    assert "a: 8 rows (8 tasks + 0 copies) of 15 available" in result.output
    bad = CliRunner().invoke(app, ["curate", "mix", str(tmp_path / "tasks.parquet"), "--weight", "a"])
    assert bad.exit_code == 2 and "expected SOURCE=FLOAT" in bad.output
    lost = CliRunner().invoke(app, [*args, "--eval-fraction", "0.2", "--out", str(tmp_path / "mix2.parquet")])
    assert lost.exit_code == 2 and "--eval-out" in lost.output
    assert not (tmp_path / "mix2.parquet").exists()  # refused before any work
