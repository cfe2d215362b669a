"""What every export shares: the report and provenance models, the message features, splits, the folder writer,
the hub push.

An export folder is a Hugging Face dataset repository as it would be pushed (docs/contracts.md, "Export
folders"): parquet shards per split under `data/` (`train-*.parquet`, `test-*.parquet` when there is a test
split), extra configs (e.g. `sharegpt/`) the same way in their own folder, `README.md` (the dataset card,
whose YAML names the configs and splits) and `export_report.json` (the machine-readable report).
`datasets.load_dataset(out)` reads it as a `DatasetDict`. The folder is written under a temporary name
beside `out` and renamed into place, so a failed export never leaves half a dataset.

Splits are made by task: every row of a task goes to the same split, so no task is in both.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shlex
import shutil
import sys
import uuid
from collections import Counter
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime
from enum import StrEnum
from pathlib import Path
from typing import Any

import datasets
import polars as pl
import pyarrow.parquet as pq
from datasets import Dataset, Features, Json, List, Value
from pydantic import BaseModel, Field, computed_field

import qaflow
from curation.export.transforms import AppliedTransform
from curation.removal_reasons import RemovalReason
from qaflow.errors import PathError
from qaflow.ledger import LedgerError
from qaflow.models.export import EXPORT_REPORT_FILE, TokenLengths
from qaflow.models.frame import ROLLOUT_SCHEMA
from qaflow.models.records import TaskRow, VersionStatus, utcnow
from qaflow.models.rollout import arguments_object
from qaflow.pool import Pool, PoolError

ROW_GROUP_ROWS = 100
"""Rows per parquet row group: whole trajectories are large, and readers (the hub viewer) read a group at once."""
DEFAULT_MAX_SHARD_BYTES = 256 * 2**20
"""Arrow bytes per parquet shard (before compression)."""

REPORT_FILE = EXPORT_REPORT_FILE
CARD_FILE = "README.md"
DATA_DIR = "data"
TRAIN, TEST = "train", "test"

TOOL_CALL_FEATURE = {
    "id": Value("string"),
    "type": Value("string"),
    "function": {"name": Value("string"), "arguments": Json()},
}
"""One tool call. `arguments` is the JSON object itself (decoded to a dict on load), as chat templates expect:
stored as a JSON string, most templates would render it double-encoded or fail on it."""
MESSAGE_FEATURE = {
    "role": Value("string"),
    "content": Value("string"),
    "reasoning_content": Value("string"),
    "tool_calls": List(TOOL_CALL_FEATURE),
    "tool_call_id": Value("string"),
    "name": Value("string"),
}
"""One chat message: every key on every message, null where unused (Arrow needs one struct type)."""
MESSAGE_KEYS = tuple(MESSAGE_FEATURE)


class ExportError(PathError):
    """An export cannot be done at all (bad input, existing output, nothing left, no hub token)."""

    def __init__(self, path: Path | str, reason: str, removed: Sequence[Removed] = ()):
        super().__init__(path, reason)
        self.removed = list(removed)


class NothingToExport(ExportError):
    """Every input row was removed (or there was none): `removed` says why."""


class ExportKind(StrEnum):
    SFT = "sft"
    RL = "rl"
    TASKS = "tasks"


class Removed(BaseModel):
    """One input row left out, and why."""

    id: str = Field(description="rollout_id (sft), task_version (rl, tasks).")
    task: str
    reason: RemovalReason
    detail: str


class Provenance(BaseModel):
    """Where an export came from: written into the dataset card and the report."""

    qaflow_version: str = qaflow.__version__
    datasets_version: str = datasets.__version__
    created_at: datetime = Field(default_factory=utcnow)
    command: str = Field(description="The command line (or 'python API').")
    inputs: list[str] = Field(default_factory=list)

    @classmethod
    def from_argv(cls, inputs: Sequence[Path | str]) -> Provenance:
        """Provenance of a CLI run: the command line as typed (program name shortened to `qaflow`)."""
        argv = ["qaflow", *sys.argv[1:]] if Path(sys.argv[0]).name == "qaflow" else sys.argv
        return cls(command=shlex.join(argv), inputs=[str(Path(p).resolve()) for p in inputs])

    @classmethod
    def for_api(cls, inputs: Sequence[Path | str]) -> Provenance:
        return cls(command="python API", inputs=[str(i) for i in inputs])


class ExportReport(BaseModel):
    """What an export wrote and what it left out."""

    kind: ExportKind
    out_dir: Path
    rows: int = Field(description="Rows written.")
    removed: list[Removed] = Field(default_factory=list)
    configs: dict[str, dict[str, str]] = Field(
        default_factory=dict, description="Hub config name -> split -> data files glob."
    )
    content_digest: str | None = Field(
        None,
        description="12 hex digits of sha256 over the shards' paths and bytes. The card's YAML configs carry it "
        "(`description`), so `load_dataset(OUT)` caches a new export apart from an earlier one in a folder of "
        "the same name (datasets keys a local folder's cache by its YAML, not its files).",
    )
    splits: dict[str, int] = Field(default_factory=dict, description="Rows per split (train, test).")
    files: list[str] = Field(default_factory=list, description="Files written, relative to out_dir.")
    counts: dict[str, dict[str, int]] = Field(default_factory=dict, description="Rows by source, effort, model...")
    notes: list[str] = Field(default_factory=list)
    provenance: Provenance
    token_lengths: TokenLengths | None = Field(
        None, description="SFT: tokens per session under a model's tokenizer (`--tokenizer`); None: not counted."
    )
    transforms: list[AppliedTransform] = Field(
        default_factory=list, description="SFT: the template-safe transforms applied to every row, in order."
    )
    for_template: str | None = Field(None, description="SFT: the chat template the transforms were chosen for.")

    @computed_field
    @property
    def removed_by_reason(self) -> dict[str, int]:
        return dict(sorted(Counter(r.reason.value for r in self.removed).items()))

    def summary(self) -> str:
        """One line for people, e.g. `sft: 12 rows to out/ (2 removed: text_repaired 1, bad_tool_call 1)`."""
        line = f"{self.kind.value}: {self.rows} rows written to {self.out_dir}"
        if len(self.splits) > 1:
            line += " (" + ", ".join(f"{name} {n}" for name, n in self.splits.items()) + ")"
        if self.removed:
            reasons = ", ".join(f"{k} {v}" for k, v in self.removed_by_reason.items())
            line += f" ({len(self.removed)} removed: {reasons})"
        return line


def message_row(message: dict[str, Any]) -> dict[str, Any]:
    """A message with exactly MESSAGE_KEYS (null where absent); tool calls as {id, type, function{name, arguments}}
    with `arguments` an object."""
    out: dict[str, Any] = {key: message.get(key) for key in MESSAGE_KEYS}
    calls = message.get("tool_calls")
    out["tool_calls"] = (
        [
            {
                "id": call.get("id"),
                "type": call.get("type") or "function",
                "function": {
                    "name": (call.get("function") or {}).get("name"),
                    "arguments": arguments_object((call.get("function") or {}).get("arguments")),
                },
            }
            for call in calls
        ]
        if calls
        else None
    )
    return out


def value_counts(rows: Sequence[dict[str, Any]], key: str) -> dict[str, int]:
    return dict(Counter(str(r[key]) for r in rows).most_common())


def dataset_from_rows(rows: Sequence[dict[str, Any]], features: Features) -> Dataset:
    return Dataset.from_dict({name: [row[name] for row in rows] for name in features}, features=features)


@contextmanager
def quiet_datasets() -> Iterator[None]:
    """datasets' progress bars off for the block (they are global state), restored after."""
    was_disabled = datasets.are_progress_bars_disabled()
    datasets.disable_progress_bars()
    try:
        yield
    finally:
        if not was_disabled:
            datasets.enable_progress_bars()


def prepare_out_dir(out_dir: Path, *, overwrite: bool) -> None:
    """Refuse to write over a non-empty folder unless `overwrite` (checked before any work is done)."""
    if out_dir.exists() and not out_dir.is_dir():
        raise ExportError(out_dir, "exists and is not a folder")
    if out_dir.is_dir() and any(out_dir.iterdir()) and not overwrite:
        raise ExportError(out_dir, "folder exists and is not empty; choose another or overwrite it (--force)")


class SplitSpec(BaseModel):
    """How rows are split into train and test, by task (so no task is in both).

    `test_tasks` names the test tasks outright (e.g. the eval split of `qaflow curate mix`); otherwise
    `test_fraction` of the tasks (at least one, never all, when there are two or more) go to test, chosen by
    a seeded hash of the task name, so the choice is stable across exports of the same pool.
    """

    test_tasks: frozenset[str] | None = None
    test_fraction: float = Field(0.0, ge=0, lt=1)
    seed: int = 0

    @property
    def active(self) -> bool:
        return self.test_tasks is not None or self.test_fraction > 0

    def test_set(self, tasks: Collection[str]) -> set[str]:
        """The tasks of `tasks` that go to the test split."""
        if self.test_tasks is not None:
            return set(tasks) & set(self.test_tasks)
        if self.test_fraction <= 0 or len(set(tasks)) < 2:
            return set()
        ordered = sorted(set(tasks), key=lambda t: hashlib.sha256(f"{self.seed}:{t}".encode()).hexdigest())
        count = min(len(ordered) - 1, max(1, round(self.test_fraction * len(ordered))))
        return set(ordered[:count])


def split_rows(
    rows: Sequence[dict[str, Any]], split: SplitSpec | None, key: str = "task"
) -> dict[str, list[dict[str, Any]]]:
    """`rows` by split (`train`, and `test` when it gets any row), each row's split decided by its task."""
    test = (split or SplitSpec()).test_set([str(r[key]) for r in rows])
    out = {TRAIN: [r for r in rows if str(r[key]) not in test]}
    tested = [r for r in rows if str(r[key]) in test]
    if tested:
        out[TEST] = tested
    return out


def write_parquet_shards(
    ds: Dataset, folder: Path, split: str = TRAIN, *, max_shard_bytes: int = DEFAULT_MAX_SHARD_BYTES
) -> list[Path]:
    """`folder/<split>-0000i-of-0000N.parquet`, N chosen so a shard holds at most about `max_shard_bytes`."""
    folder.mkdir(parents=True, exist_ok=True)
    count = max(1, min(len(ds), math.ceil(ds.data.nbytes / max_shard_bytes)))
    paths = []
    for index in range(count):
        path = folder / f"{split}-{index:05d}-of-{count:05d}.parquet"
        shard = ds.shard(num_shards=count, index=index, contiguous=True).flatten_indices()
        # pyarrow directly: datasets' to_parquet fails on a Json() feature nested in lists that are all null
        # (a shard without any tool call). The table carries the features in its schema metadata.
        pq.write_table(shard.data.table, path, row_group_size=ROW_GROUP_ROWS)
        paths.append(path)
    return paths


def config_globs(folder: str, splits: Collection[str]) -> dict[str, str]:
    return {split: f"{folder}/{split}-*.parquet" for split in (TRAIN, TEST) if split in splits}


def content_digest(folder: Path) -> str:
    """12 hex digits of sha256 over the shards' paths and bytes: the same rows give the same digest."""
    h = hashlib.sha256()
    for path in sorted(folder.rglob("*.parquet")):
        h.update(path.relative_to(folder).as_posix().encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:12]


def write_export(
    configs: Mapping[str, Mapping[str, Dataset]],
    out_dir: Path,
    report: ExportReport,
    *,
    card: Callable[[ExportReport], str],
    overwrite: bool = False,
    max_shard_bytes: int = DEFAULT_MAX_SHARD_BYTES,
) -> ExportReport:
    """Write each config's splits as parquet shards (`default` under `data/`, others under their name), the card
    and the report; swap the folder into `out_dir`.

    `card` gets the finished report (files, configs and splits filled in) and returns the card's text.
    """
    prepare_out_dir(out_dir, overwrite=overwrite)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = out_dir.parent / f".{out_dir.name}.tmp-{uuid.uuid4().hex[:8]}"
    try:
        with quiet_datasets():
            for name, splits in configs.items():
                folder = DATA_DIR if name == "default" else name
                for split, ds in splits.items():
                    write_parquet_shards(ds, tmp / folder, split, max_shard_bytes=max_shard_bytes)
        globs = {
            name: config_globs(DATA_DIR if name == "default" else name, splits) for name, splits in configs.items()
        }
        files = sorted(p.relative_to(tmp).as_posix() for p in tmp.rglob("*") if p.is_file())
        report = report.model_copy(
            update={
                "configs": globs,
                "content_digest": content_digest(tmp),
                "splits": {split: len(ds) for split, ds in configs["default"].items()},
                "files": [*files, CARD_FILE, REPORT_FILE],
            }
        )
        (tmp / CARD_FILE).write_text(card(report))
        (tmp / REPORT_FILE).write_text(report.model_dump_json(indent=2) + "\n")
        if out_dir.exists():
            shutil.rmtree(out_dir)
        tmp.rename(out_dir)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)
    return report


def split_datasets(
    rows: Sequence[dict[str, Any]], features: Features, split: SplitSpec | None, key: str = "task"
) -> dict[str, Dataset]:
    """One Dataset per split of `rows` (see `split_rows`)."""
    return {name: dataset_from_rows(part, features) for name, part in split_rows(rows, split, key).items()}


def load_export(out_dir: Path | str, config: str | None = None) -> datasets.DatasetDict:
    """An export folder as a DatasetDict (train, and test when there is one), read from its parquet files
    without the hub and without a cache copy of the data (`load_dataset(out_dir)` gives the same rows)."""
    out_dir = Path(out_dir)
    report_path = out_dir / REPORT_FILE
    if not report_path.is_file():
        raise ExportError(out_dir, f"not an export folder (no {REPORT_FILE})")
    report = ExportReport.model_validate_json(report_path.read_text())
    name = config or "default"
    if name not in report.configs:
        raise ExportError(out_dir, f"no config {name!r}; it has {', '.join(report.configs)}")
    out = {}
    for split, pattern in report.configs[name].items():
        loaded = Dataset.from_parquet(sorted(str(p) for p in out_dir.glob(pattern)), keep_in_memory=True)
        assert isinstance(loaded, Dataset)
        out[split] = loaded
    return datasets.DatasetDict(out)


def conform_frame(frame: pl.DataFrame, where: Path | str = "rollouts") -> pl.DataFrame:
    """`frame` cast to ROLLOUT_SCHEMA; an ExportError names missing columns or a column of the wrong type."""
    missing = [c for c in ROLLOUT_SCHEMA if c not in frame.columns]
    if missing:
        raise ExportError(where, f"not a rollout frame: missing columns {missing}")
    try:
        return frame.select([pl.col(c).cast(t) for c, t in ROLLOUT_SCHEMA.items()])
    except pl.exceptions.PolarsError as e:
        raise ExportError(where, f"not a rollout frame: {e}") from e


def parse_statuses(status: Sequence[str] | None) -> list[VersionStatus] | None:
    """Task statuses to export (None: every status); an ExportError names an unknown one."""
    if status is None:
        return None
    known = {s.value: s for s in VersionStatus}
    unknown = [s for s in status if s not in known]
    if unknown:
        raise ExportError("--status", f"unknown status {unknown}; known: {', '.join(known)}")
    return [known[s] for s in status]


def open_pool(pool: Pool | Path | str) -> Pool:
    """An open pool (its ledger must exist: run `qaflow pool scan` first); an ExportError otherwise."""
    if isinstance(pool, Pool):
        return pool
    try:
        return Pool.open(pool, create=False)
    except (PoolError, LedgerError) as e:
        raise ExportError(pool, str(e)) from e


def select_tasks(pool: Pool, status: Sequence[str] | None) -> list[TaskRow]:
    """The pool's present tasks whose current version has one of `status` (None: all), by name."""
    wanted = parse_statuses(status)
    return [row for row in pool.list() if wanted is None or row.status in wanted]


def hub_token() -> str | None:
    """The Hugging Face token: `HF_TOKEN`, else the one `hf auth login` stored; None when there is none."""
    from huggingface_hub import get_token

    return os.environ.get("HF_TOKEN") or get_token()


def require_hub_token(repo: str) -> str:
    """The token for pushing to `repo`, or an ExportError telling how to provide one."""
    token = hub_token()
    if not token:
        raise ExportError(
            repo,
            "cannot push: no Hugging Face token (set HF_TOKEN or run `hf auth login`); nothing was pushed",
        )
    return token


def push_export(out_dir: Path, repo: str, *, private: bool = False, token: str | None = None) -> str:
    """Push an export folder to the hub dataset `repo`: each config with its splits (`push_to_hub`), then the
    card's prose.

    The hub writes its own YAML (configs, features) into the card; the body of ours replaces its text.

    Raises:
        ExportError: no token, or `out_dir` is not an export folder.
    """
    from huggingface_hub import DatasetCard

    token = token or require_hub_token(repo)
    report_path = out_dir / REPORT_FILE
    if not report_path.is_file():
        raise ExportError(out_dir, f"not an export folder (no {REPORT_FILE})")
    report = ExportReport.model_validate_json(report_path.read_text())
    for name in report.configs:
        config = {} if name == "default" else {"config_name": name}
        load_export(out_dir, name).push_to_hub(repo, private=private, token=token, **config)
    card = DatasetCard.load(repo, token=token)
    card.text = _card_body((out_dir / CARD_FILE).read_text())
    card.push_to_hub(repo, token=token)
    return f"https://huggingface.co/datasets/{repo}"


def _card_body(text: str) -> str:
    """The card without its YAML front matter."""
    if text.startswith("---\n"):
        end = text.find("\n---\n", 4)
        if end != -1:
            return text[end + 5 :]
    return text


def dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)
