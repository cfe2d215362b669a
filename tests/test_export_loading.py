"""Every export (SFT, RL, tasks) loads the three usual ways with the same splits and rows: `load_dataset(OUT)` (the
card's YAML configs), `load_dataset("parquet", data_dir=OUT)` (split names inferred from the shard names, as the
Hub names them) and `load_dataset("parquet", data_files=...)`; and a new export in a folder of an earlier one's
name never loads the earlier rows from the cache."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import datasets
import pytest

from curation.export import export_sft
from curation.export.common import SplitSpec, load_export
from curation.export.rl import export_rl
from curation.export.tasks import export_tasks
from qaflow.models.frame import records_to_frame
from qaflow.pool import Pool
from tests.test_export import OPEN, make_pool, versions
from tests.trajectories import make_record

SHARDS = ["data/test-00000-of-00001.parquet", "data/train-00000-of-00001.parquet"]


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")


def _sft(pool_dir: Path, out: Path, split: SplitSpec) -> None:
    known = versions(pool_dir)
    with Pool.open(pool_dir, create=False) as pool:
        names = {row.path: row.name for row in pool.list()}
    records = [make_record(task=names[p], task_version=known[p]) for p in ("alpha", "real/csv-sum", "real/fix-slugify")]
    export_sft(records_to_frame(records), out, pool=pool_dir, split=split)


EXPORTS: dict[str, Callable[[Path, Path, SplitSpec], Any]] = {
    "sft": _sft,
    "rl": lambda pool_dir, out, split: export_rl(pool_dir, out, split=split),
    "tasks": lambda pool_dir, out, split: export_tasks(pool_dir, out, split=split),
}


def _rows(dd: datasets.DatasetDict) -> dict[str, list[dict[str, Any]]]:
    return {split: dd[split].to_list() for split in sorted(dd)}


@pytest.mark.parametrize("kind", sorted(EXPORTS))
def test_an_export_loads_three_ways_with_the_same_splits(kind: str, tmp_path: Path) -> None:
    pool_dir = make_pool(tmp_path)
    out = tmp_path / kind
    EXPORTS[kind](pool_dir, out, SplitSpec(test_tasks=frozenset({"test/alpha"})))
    assert sorted(p.relative_to(out).as_posix() for p in (out / "data").glob("*.parquet")) == SHARDS

    cache = str(tmp_path / "hf-cache")
    by_card = datasets.load_dataset(str(out), cache_dir=cache)
    by_dir = datasets.load_dataset("parquet", data_dir=str(out), cache_dir=cache)
    files = {split: str(out / "data" / f"{split}-*.parquet") for split in ("train", "test")}
    by_files = datasets.load_dataset("parquet", data_files=files, cache_dir=cache)
    expected = _rows(load_export(out))
    assert set(expected) == {"train", "test"} and len(expected["test"]) == 1
    for loaded in (by_card, by_dir, by_files):
        assert _rows(loaded) == expected


def test_a_new_export_in_a_folder_of_the_same_name_is_not_read_from_the_cache(tmp_path: Path) -> None:
    cache = str(tmp_path / "hf-cache")
    for task in ("x/one", "x/two"):
        out = tmp_path / "sft"
        export_sft(records_to_frame([make_record(task=task)]), out, gate=OPEN, sharegpt=False, overwrite=True)
        assert datasets.load_dataset(str(out), split="train", cache_dir=cache)["task"] == [task]
        assert datasets.load_dataset("parquet", data_dir=str(out), split="train", cache_dir=cache)["task"] == [task]
