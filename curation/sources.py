"""Task sources and the task frame that every curation stage reads and writes.

A source adapter yields `SourcedTask`s with provenance (source name, original id, licence):

- `HarborSource`: Harbor task folders under a root (`find_task_dirs`).
- `TerminalBenchSource`: Terminal-Bench folders, converted with `qaflow.importers.tb` into `out_dir` first.
- `DatasetSource`: rows of a Hugging Face dataset (a local .jsonl/.json/.csv/.parquet file, a folder written
  by `save_to_disk`, or a hub id when the hub is reachable) with instruction / Dockerfile / tests / solution
  columns named by a `ColumnMap`. Rows are materialised as Harbor task folders under `out_dir` so the rest
  of qaflow (audit, rollouts) can run them.
- `PythonSource`: a `module:function` entry point called with `options`, yielding `SourcedTask`s (or dicts).

The task frame (`TASK_SCHEMA`), one row per task:

    id           unique: "<source>:<original_id>"; augmented tasks "<parent id>~<style>", upsampled copies
                 "<id>_copyN"
    source       the configured source name (it overrides whatever a generator says)
    original_id  the id inside the source: the folder path relative to the source root, the dataset's id
                 column (else the row index), or the generator's id
    licence      task.toml `[metadata] licence`/`license`, the dataset's licence column, else the source's
                 configured licence (may be null)
    name         the task name
    instruction  the instruction text
    path         the Harbor task folder (null for dataset rows that are not materialised)
    version      the task's content hash (`Task.version`); for a row not materialised, sha256 of its fields

Stages may add columns (status, pass_rate, attempts, copy_of, copy, parent_id, augment_style,
augment_variant). Each stage is a pure function of frames returning a `StageResult`: the rows kept, and a
`removed` frame (`REMOVED_SCHEMA`: id, stage, reason) that says why every other row went.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import re
import shutil
import tomllib
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

import polars as pl
import tomli_w
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from curation.licences import hub_licence
from qaflow.config_file import read_config_data, validation_reason
from qaflow.errors import ConfigError, QaflowError, TaskError
from qaflow.task import Task, find_task_dirs

TASK_SCHEMA: dict[str, pl.DataType] = {
    "id": pl.String(),
    "source": pl.String(),
    "original_id": pl.String(),
    "licence": pl.String(),
    "name": pl.String(),
    "instruction": pl.String(),
    "path": pl.String(),
    "version": pl.String(),
}
REMOVED_SCHEMA: dict[str, pl.DataType] = {"id": pl.String(), "stage": pl.String(), "reason": pl.String()}


class SourceError(QaflowError):
    """A source cannot be read at all (missing folder, bad config, unknown entry point)."""

    def __init__(self, where: str | Path, reason: str):
        self.where = str(where)
        self.reason = reason
        super().__init__(f"{where}: {reason}")


@dataclass(frozen=True)
class StageResult:
    """What a stage returns: the rows it kept, why it removed the others, and numbers worth recording."""

    kept: pl.DataFrame
    removed: pl.DataFrame
    info: dict[str, Any] = field(default_factory=dict)


def empty_removed() -> pl.DataFrame:
    return pl.DataFrame(schema=REMOVED_SCHEMA)


def removed_frame(rows: Iterable[tuple[str, str, str]]) -> pl.DataFrame:
    """A removed frame from (id, stage, reason) tuples."""
    return pl.DataFrame(list(rows), schema=REMOVED_SCHEMA, orient="row")


class SourcedTask(BaseModel):
    """One task with its provenance."""

    model_config = ConfigDict(extra="forbid")

    source: str = Field(description="Source name (set by the adapter from its config).")
    original_id: str = Field(description="The task's id inside its source.")
    licence: str | None = None
    name: str
    instruction: str
    path: Path | None = Field(None, description="Harbor task folder; None for rows not materialised.")
    version: str

    @field_validator("licence")
    @classmethod
    def _hub_licence(cls, value: str | None) -> str | None:
        return hub_licence(value)

    @property
    def id(self) -> str:
        return f"{self.source}:{self.original_id}"


class SourceProblem(BaseModel):
    """A task a source could not deliver (it does not load, a row misses a column); it becomes a removal."""

    source: str
    original_id: str
    reason: str

    @property
    def id(self) -> str:
        return f"{self.source}:{self.original_id}"


class HarborSource(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Literal["harbor"] = "harbor"
    name: str = Field(description="Source name: the prefix of every id.")
    path: Path = Field(description="A Harbor task folder or a folder of them (any depth).")
    licence: str | None = Field(None, description="Licence of tasks whose task.toml names none.")


class TerminalBenchSource(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Literal["terminal_bench"] = "terminal_bench"
    name: str
    path: Path = Field(description="A Terminal-Bench task folder (task.yaml) or a folder of them.")
    out_dir: Path = Field(description="Where the converted Harbor tasks are written (as `qaflow import tb`).")
    licence: str | None = None


class TasksExportSource(BaseModel):
    """The tasks of a `qaflow export tasks` folder, rebuilt byte for byte: the same task versions come back."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["tasks_export"] = "tasks_export"
    name: str
    path: Path = Field(description="A `qaflow export tasks` folder (its README.md, data/ and export_report.json).")
    out_dir: Path = Field(description="Where the task folders are rebuilt: out_dir/<source>/<task name>.")
    split: str | None = Field(None, description="Only this split (train, test); None: every split.")
    licence: str | None = Field(None, description="Licence of rows that carry none.")


class ColumnMap(BaseModel):
    """Which dataset columns hold what. tests/solution/dockerfile columns hold a script (str) or a mapping of
    file name to content (the tests/, solution/ or environment/ folder; it must hold test.sh, solve.sh or
    Dockerfile)."""

    model_config = ConfigDict(extra="forbid")

    id: str | None = Field("id", description="Column with the row's id; None: the row index.")
    instruction: str = "instruction"
    dockerfile: str = "dockerfile"
    tests: str = "tests"
    solution: str = "solution"
    name: str | None = Field(None, description="Column with the task name; None: '<source>/<id>'.")
    licence: str | None = Field(None, description="Column with the row's licence; None: the source's licence.")


DATA_FILE_BUILDERS = {".jsonl": "json", ".json": "json", ".csv": "csv", ".parquet": "parquet"}


class DatasetSource(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Literal["dataset"] = "dataset"
    name: str
    dataset: str = Field(
        description=(
            "A local data file (.jsonl, .json, .csv, .parquet), a folder written by `Dataset.save_to_disk`, "
            "or a `datasets.load_dataset` path or hub id (needs the hub)."
        )
    )
    subset: str | None = Field(None, description="Dataset configuration name (load_dataset's `name`).")
    data_files: str | list[str] | dict[str, str | list[str]] | None = None
    split: str = "train"
    columns: ColumnMap = Field(default_factory=ColumnMap)
    out_dir: Path | None = Field(
        None, description="Rows become Harbor task folders under out_dir/<source>/; None: not materialised."
    )
    licence: str | None = None
    limit: int | None = Field(None, ge=1, description="Read at most this many rows.")
    cache_dir: Path | None = Field(None, description="datasets cache folder (default: the datasets default).")
    agent_timeout_sec: float = 600.0
    verifier_timeout_sec: float = 600.0


class PythonSource(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: Literal["python"] = "python"
    name: str
    entry_point: str = Field(description="'module:function'; called with **options, yields SourcedTask or dicts.")
    options: dict[str, Any] = Field(default_factory=dict)
    licence: str | None = None


SourceSpec = Annotated[
    HarborSource | TerminalBenchSource | TasksExportSource | DatasetSource | PythonSource, Field(discriminator="kind")
]


class SourcesConfig(BaseModel):
    """A list of sources (YAML, TOML or JSON: `sources: [{kind: harbor, name: local, path: tasks_repo}, ...]`)."""

    model_config = ConfigDict(extra="forbid")

    sources: list[SourceSpec]

    @classmethod
    def load(cls, path: Path | str) -> SourcesConfig:
        """Raises SourceError naming the file for unreadable or invalid config; relative paths are taken
        relative to the config file's folder."""
        path = Path(path)
        try:
            data = read_config_data(path, what="sources config")
        except ConfigError as e:
            raise SourceError(path, e.reason) from e
        try:
            config = cls.model_validate(data)
        except ValidationError as e:
            raise SourceError(path, f"invalid sources config: {validation_reason(e)}") from e
        base = path.resolve().parent
        for spec in config.sources:
            for attr in ("path", "out_dir", "cache_dir"):
                value = getattr(spec, attr, None)
                if isinstance(value, Path) and not value.is_absolute():
                    setattr(spec, attr, base / value)
            if isinstance(spec, DatasetSource) and (base / spec.dataset).exists():
                spec.dataset = str(base / spec.dataset)
        return config


# -- adapters ---------------------------------------------------------------------------------------


def iter_source(spec: SourceSpec) -> Iterator[SourcedTask | SourceProblem]:
    """The tasks of one source, and a `SourceProblem` for each one it cannot deliver.

    Raises:
        SourceError: the source as a whole cannot be read.
    """
    if isinstance(spec, HarborSource):
        yield from _harbor(spec)
    elif isinstance(spec, TerminalBenchSource):
        yield from _terminal_bench(spec)
    elif isinstance(spec, TasksExportSource):
        yield from _tasks_export(spec)
    elif isinstance(spec, DatasetSource):
        yield from _dataset(spec)
    else:
        yield from _python(spec)


def _licence_of(task: Task, default: str | None) -> str | None:
    value = task.config.metadata.get("licence", task.config.metadata.get("license"))
    return str(value) if value is not None else default


def _sourced(task: Task, source: str, original_id: str, default_licence: str | None) -> SourcedTask:
    return SourcedTask(
        source=source,
        original_id=original_id,
        licence=_licence_of(task, default_licence),
        name=task.name,
        instruction=task.instruction,
        path=task.path,
        version=task.version,
    )


def _harbor(spec: HarborSource) -> Iterator[SourcedTask | SourceProblem]:
    root = spec.path
    if not root.is_dir():
        raise SourceError(root, "not a folder")
    for folder in find_task_dirs(root):
        original_id = folder.name if folder == root else folder.relative_to(root).as_posix()
        try:
            task = Task.load(folder)
        except TaskError as e:
            yield SourceProblem(source=spec.name, original_id=original_id, reason=f"invalid task: {e}")
            continue
        yield _sourced(task, spec.name, original_id, spec.licence)


def _tasks_export(spec: TasksExportSource) -> Iterator[SourcedTask | SourceProblem]:
    from curation.export.common import ExportError, load_export
    from curation.export.tasks import rows_to_task_dir

    try:
        splits = load_export(spec.path)
    except ExportError as e:
        raise SourceError(spec.path, e.reason) from e
    if spec.split is not None and spec.split not in splits:
        raise SourceError(spec.path, f"no split {spec.split!r}; it has {', '.join(splits)}")
    for split, rows in splits.items():
        if spec.split not in (None, split):
            continue
        for row in rows:
            name = str(row["name"])
            dest = spec.out_dir / safe_folder_name(spec.name) / safe_folder_name(name)
            try:
                if not (dest.is_dir() and Task.load(dest).version == row["version"]):
                    if dest.exists():
                        raise SourceError(dest, "exists and holds another version of the task; not overwritten")
                    rows_to_task_dir(row, dest)
                task = Task.load(dest)
            except (SourceError, ExportError, TaskError, OSError) as e:
                yield SourceProblem(source=spec.name, original_id=name, reason=f"cannot rebuild: {e}")
                continue
            licence = row.get("licence") or spec.licence
            yield _sourced(task, spec.name, name, licence)


def _terminal_bench(spec: TerminalBenchSource) -> Iterator[SourcedTask | SourceProblem]:
    from qaflow.importers.tb import TbImportError, import_tb

    try:
        report = import_tb(spec.path, spec.out_dir)
    except TbImportError as e:
        raise SourceError(e.path, e.reason) from e
    root = spec.path.resolve()
    for entry in report.entries:
        original_id = entry.source.name if entry.source == root else entry.source.relative_to(root).as_posix()
        if entry.dest is None or entry.error:
            yield SourceProblem(source=spec.name, original_id=original_id, reason=f"conversion failed: {entry.error}")
            continue
        try:
            task = Task.load(entry.dest)
        except TaskError as e:
            yield SourceProblem(source=spec.name, original_id=original_id, reason=f"invalid task: {e}")
            continue
        yield _sourced(task, spec.name, original_id, spec.licence)


def load_rows(spec: DatasetSource) -> Any:
    """The dataset split as a `datasets.Dataset` (local files never touch the network)."""
    import datasets

    local = Path(spec.dataset)
    try:
        if local.is_dir() and any((local / f).is_file() for f in ("dataset_info.json", "dataset_dict.json")):
            loaded = datasets.load_from_disk(str(local))
            return loaded[spec.split] if isinstance(loaded, datasets.DatasetDict) else loaded
        if local.is_file():
            builder = DATA_FILE_BUILDERS.get(local.suffix.lower())
            if builder is None:
                raise SourceError(
                    local, f"unknown data file type {local.suffix!r}; use one of {sorted(DATA_FILE_BUILDERS)}"
                )
            return datasets.load_dataset(
                builder, data_files={spec.split: str(local)}, split=spec.split, cache_dir=_str(spec.cache_dir)
            )
        return datasets.load_dataset(
            spec.dataset, spec.subset, data_files=spec.data_files, split=spec.split, cache_dir=_str(spec.cache_dir)
        )
    except SourceError:
        raise
    except Exception as e:  # datasets raises many unrelated types (FileNotFoundError, DatasetNotFoundError, ...)
        raise SourceError(spec.dataset, f"cannot load the dataset: {type(e).__name__}: {e}") from e


def _str(path: Path | None) -> str | None:
    return str(path) if path is not None else None


_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


def safe_folder_name(original_id: str) -> str:
    """A folder name for an id: unsafe characters become '-'; a short hash of the id keeps changed names unique."""
    safe = _SAFE.sub("-", original_id).strip("-.") or "task"
    if safe != original_id:
        safe = f"{safe[:80]}-{hashlib.sha1(original_id.encode()).hexdigest()[:8]}"
    return safe


def _files(value: Any, default_name: str, column: str) -> dict[str, str]:
    """A script column as {relative file: content}; raises ValueError naming the column when unusable."""
    if isinstance(value, str):
        if not value.strip():
            raise ValueError(f"column {column!r} is empty")
        return {default_name: value}
    if isinstance(value, Mapping):
        files = {str(k): str(v) for k, v in value.items() if v is not None}
        if default_name not in files:
            raise ValueError(f"column {column!r} has no {default_name}")
        for rel in files:
            if Path(rel).is_absolute() or ".." in Path(rel).parts:
                raise ValueError(f"column {column!r} names a file outside its folder: {rel!r}")
        return files
    raise ValueError(
        f"column {column!r} is missing" if value is None else f"column {column!r} is a {type(value).__name__}"
    )


def _dataset(spec: DatasetSource) -> Iterator[SourcedTask | SourceProblem]:
    rows = load_rows(spec)
    cols = spec.columns
    for index, row in enumerate(rows):
        if spec.limit is not None and index >= spec.limit:
            break
        raw_id = row.get(cols.id) if cols.id else None
        original_id = str(raw_id) if raw_id not in (None, "") else str(index)
        try:
            instruction = row.get(cols.instruction)
            if not isinstance(instruction, str) or not instruction.strip():
                raise ValueError(f"column {cols.instruction!r} is missing or empty")
            environment = _files(row.get(cols.dockerfile), "Dockerfile", cols.dockerfile)
            tests = _files(row.get(cols.tests), "test.sh", cols.tests)
            solution = _files(row.get(cols.solution), "solve.sh", cols.solution)
        except ValueError as e:
            yield SourceProblem(source=spec.name, original_id=original_id, reason=str(e))
            continue
        licence = row.get(cols.licence) if cols.licence else None
        licence = str(licence) if licence not in (None, "") else spec.licence
        name = str(row.get(cols.name) or "") if cols.name else ""
        name = name or f"{spec.name}/{original_id}"
        if spec.out_dir is None:
            payload = json.dumps([instruction, environment, tests, solution], sort_keys=True)
            yield SourcedTask(
                source=spec.name, original_id=original_id, licence=licence, name=name, instruction=instruction,
                path=None, version=hashlib.sha256(payload.encode()).hexdigest(),
            )  # fmt: skip
            continue
        folder = spec.out_dir / safe_folder_name(spec.name) / safe_folder_name(original_id)
        metadata = {"source": spec.name, "original_id": original_id} | ({"licence": licence} if licence else {})
        config = {
            "schema_version": "1.4",
            "task": {"name": name},
            "metadata": metadata,
            "verifier": {"timeout_sec": spec.verifier_timeout_sec},
            "agent": {"timeout_sec": spec.agent_timeout_sec},
        }
        try:
            write_task_folder(folder, config, instruction, environment, tests, solution, owner=spec.name)
            task = Task.load(folder)
        except (TaskError, SourceError) as e:
            yield SourceProblem(source=spec.name, original_id=original_id, reason=str(e))
            continue
        yield SourcedTask(
            source=spec.name, original_id=original_id, licence=licence, name=task.name,
            instruction=task.instruction, path=task.path, version=task.version,
        )  # fmt: skip


def write_task_folder(
    folder: Path,
    config: dict[str, Any],
    instruction: str,
    environment: dict[str, str],
    tests: dict[str, str],
    solution: dict[str, str],
    *,
    owner: str,
) -> None:
    """Write a Harbor task folder. An existing folder is replaced only when its task.toml says `owner` wrote it.

    Raises:
        SourceError: the folder exists and was not written by this source.
    """
    if folder.exists():
        try:
            written_by = tomllib.loads((folder / "task.toml").read_text(encoding="utf-8"))["metadata"]["source"]
        except (OSError, KeyError, TypeError, ValueError):
            written_by = None
        if written_by != owner:
            raise SourceError(folder, f"exists and was not materialised by source {owner!r}; not overwritten")
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    (folder / "task.toml").write_text(tomli_w.dumps(config), encoding="utf-8")
    (folder / "instruction.md").write_text(instruction, encoding="utf-8")
    for sub, files in (("environment", environment), ("tests", tests), ("solution", solution)):
        for rel, text in files.items():
            target = folder / sub / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
            if target.suffix == ".sh":
                target.chmod(0o755)


def _python(spec: PythonSource) -> Iterator[SourcedTask | SourceProblem]:
    module_name, _, attr = spec.entry_point.partition(":")
    if not module_name or not attr:
        raise SourceError(spec.entry_point, "entry point must look like 'package.module:function'")
    try:
        function = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as e:
        raise SourceError(spec.entry_point, f"cannot load the entry point: {e}") from e
    for i, item in enumerate(function(**spec.options)):
        data = item.model_dump() if isinstance(item, SourcedTask) else dict(item)
        data["source"] = spec.name
        if data.get("licence") is None:
            data["licence"] = spec.licence
        try:
            yield SourcedTask.model_validate(data)
        except ValidationError as e:
            original_id = str(data.get("original_id") or i)
            first = e.errors()[0]
            reason = f"generator item invalid: {'.'.join(map(str, first['loc']))}: {first['msg']}"
            yield SourceProblem(source=spec.name, original_id=original_id, reason=reason)


# -- the frame --------------------------------------------------------------------------------------


def tasks_frame(tasks: Iterable[SourcedTask]) -> pl.DataFrame:
    """The task frame (TASK_SCHEMA) of some sourced tasks, in order."""
    rows = [
        {
            "id": t.id,
            "source": t.source,
            "original_id": t.original_id,
            "licence": t.licence,
            "name": t.name,
            "instruction": t.instruction,
            "path": str(t.path) if t.path is not None else None,
            "version": t.version,
        }
        for t in tasks
    ]
    return pl.DataFrame(rows, schema=TASK_SCHEMA)


def collect_tasks(specs: Iterable[SourceSpec]) -> StageResult:
    """Every source's tasks as one frame. Problems, and tasks whose id was already seen, are removals
    (stage `source`). `info` counts tasks and problems per source."""
    tasks: list[SourcedTask] = []
    removed: list[tuple[str, str, str]] = []
    seen: set[str] = set()
    counts: dict[str, dict[str, int]] = {}
    for spec in specs:
        count = counts.setdefault(spec.name, {"tasks": 0, "problems": 0})
        for item in iter_source(spec):
            if isinstance(item, SourceProblem):
                removed.append((item.id, "source", item.reason))
                count["problems"] += 1
            elif item.id in seen:
                removed.append((item.id, "source", "duplicate id: an earlier task of the sources has it"))
                count["problems"] += 1
            else:
                seen.add(item.id)
                tasks.append(item)
                count["tasks"] += 1
    return StageResult(kept=tasks_frame(tasks), removed=removed_frame(removed), info={"sources": counts})


def read_tasks(path: Path | str) -> pl.DataFrame:
    """A task frame from parquet (written by `write_tasks` or a stage)."""
    frame = pl.read_parquet(path)
    missing = [c for c in TASK_SCHEMA if c not in frame.columns]
    if missing:
        raise SourceError(path, f"not a task frame: missing columns {missing}")
    return frame


def write_tasks(frame: pl.DataFrame, path: Path | str) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    frame.write_parquet(path)
