"""A pool: a folder of task folders (at any depth) plus a ledger of their versions.

A task folder is a folder holding `task.toml`; the walk does not descend into one, nor into
hidden folders or symlinked ones. `scan` records each folder's current version: a changed
folder becomes a new version whose parent is the previous version at the same path (or,
for a folder new to the pool, the latest version of the same task name). Invalid tasks are
data: they are recorded with status `invalid` and the reason, and the scan goes on.
"""

from __future__ import annotations

import tomllib
from collections.abc import Callable
from enum import StrEnum
from pathlib import Path

import polars as pl
from pydantic import BaseModel, Field, ValidationError, computed_field

from qaflow.errors import PathError, TaskError
from qaflow.ledger import Ledger, StatusWriter
from qaflow.ledger.lock import run_lock
from qaflow.models.records import (
    Finding,
    Head,
    Result,
    StatusChange,
    TaskRow,
    TaskVersion,
    VersionStatus,
    utcnow,
)
from qaflow.models.rollout import RolloutTally
from qaflow.task import DEFAULT_MAX_FILE_BYTES, Task, TaskConfig, find_task_dirs, tree_hash

DEFAULT_LEDGER = Path(".qaflow") / "ledger.sqlite"
"""Where a pool keeps its ledger, relative to the pool folder."""


class PoolError(PathError):
    """The pool cannot be opened or the thing asked for is not in it."""


class PoolConfig(BaseModel):
    ledger_path: Path | None = Field(
        default=None,
        description="Ledger file; default <pool>/.qaflow/ledger.sqlite. Relative paths are under the pool.",
    )
    require_solution: bool = Field(default=True, description="A task without solution/solve.sh is invalid.")
    max_file_bytes: int = Field(default=DEFAULT_MAX_FILE_BYTES, description="Largest file a task may hold.")


class ScanOutcome(StrEnum):
    ADDED = "added"
    """A version never recorded before, with no parent."""
    CHANGED = "changed"
    """A version never recorded before, derived from the previous one at this path (or of this name)."""
    UNCHANGED = "unchanged"
    """The folder still holds the version recorded for it."""
    KNOWN = "known"
    """The folder holds a version already recorded elsewhere (a copy, a move, or a revert)."""
    REVALIDATED = "revalidated"
    """Same files, but loading them now gives the opposite answer (the validator changed)."""


class ScanEntry(BaseModel):
    path: str = Field(description="Task folder relative to the pool root.")
    name: str
    version: str
    outcome: ScanOutcome
    status: VersionStatus
    parent_version: str | None = None
    error: str | None = None


class ScanProblem(BaseModel):
    """A folder the scan could not even read (so it has no version)."""

    path: str
    reason: str


class ScanReport(BaseModel):
    root: Path
    ledger: Path
    entries: list[ScanEntry] = Field(default_factory=list)
    removed: list[str] = Field(default_factory=list, description="Pool paths that held a task and no longer do.")
    problems: list[ScanProblem] = Field(default_factory=list)

    @computed_field
    @property
    def total(self) -> int:
        return len(self.entries) + len(self.problems)

    @computed_field
    @property
    def duplicate_names(self) -> dict[str, list[str]]:
        """Task names that more than one valid folder declares (`[task] name`), with their paths: reports,
        rollouts and datasets name tasks by it, so two tasks would read as one."""
        paths: dict[str, list[str]] = {}
        for e in self.entries:
            if e.status is not VersionStatus.INVALID:
                paths.setdefault(e.name, []).append(e.path)
        return {name: sorted(found) for name, found in sorted(paths.items()) if len(found) > 1}

    def duplicate_warnings(self) -> list[str]:
        """One line per name in `duplicate_names`."""
        return [
            f"{len(found)} task folders share the name {name!r} ({', '.join(found)}): reports, rollouts and "
            "datasets name tasks by it; give each its own [task] name in task.toml"
            for name, found in self.duplicate_names.items()
        ]

    @computed_field
    @property
    def invalid(self) -> int:
        return sum(e.status == VersionStatus.INVALID for e in self.entries) + len(self.problems)

    @computed_field
    @property
    def ok(self) -> int:
        return self.total - self.invalid

    @computed_field
    @property
    def new_versions(self) -> int:
        return sum(e.outcome in (ScanOutcome.ADDED, ScanOutcome.CHANGED) for e in self.entries)

    @computed_field
    @property
    def unchanged(self) -> int:
        return sum(e.outcome == ScanOutcome.UNCHANGED for e in self.entries)

    def summary(self) -> str:
        """One line for people, e.g. `12 tasks: 10 ok, 2 invalid (3 new versions, 9 unchanged, 0 removed)`."""
        return (
            f"{self.total} tasks: {self.ok} ok, {self.invalid} invalid "
            f"({self.new_versions} new versions, {self.unchanged} unchanged, {len(self.removed)} removed)"
        )


class TaskHistory(BaseModel):
    """Everything the ledger knows about one task: its versions (lineage), where it is now, and its results."""

    name: str
    versions: list[TaskVersion]
    heads: list[Head]
    results: list[Result]
    findings: list[Finding]
    status_log: list[StatusChange]
    rollouts: list[RolloutTally] = Field(default_factory=list)
    """Attempts per version, model, effort and round: graded, passed, and infrastructure or model errors apart."""


class Pool:
    """A pool folder and its ledger. Open with `Pool.open`; use as a context manager or call `close()`."""

    def __init__(self, root: Path, ledger: Ledger, config: PoolConfig):
        self.root = root
        self.ledger = ledger
        self.config = config

    @classmethod
    def open(cls, root: Path | str, *, config: PoolConfig | None = None, create: bool = True) -> Pool:
        """Open the pool at `root`.

        Raises:
            PoolError: `root` is not a folder, or (with `create=False`) it has no ledger yet.
        """
        config = config or PoolConfig()
        root = Path(root).resolve()
        if not root.is_dir():
            raise PoolError(root, "not a folder")
        ledger_path = root / (config.ledger_path or DEFAULT_LEDGER)
        if not create and not ledger_path.is_file():
            raise PoolError(ledger_path, f"no pool ledger here; run `qaflow pool scan {root}` first")
        return cls(root, Ledger(ledger_path), config)

    def close(self) -> None:
        self.ledger.close()

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def discover(self) -> list[Path]:
        """Every task folder under the root, sorted; hidden and symlinked folders are not entered."""
        return find_task_dirs(self.root)

    def rel(self, folder: Path) -> str:
        return folder.resolve().relative_to(self.root).as_posix()

    def scan(self, *, progress: Callable[[int, int], None] | None = None) -> ScanReport:
        """Record the current version of every task folder; `progress(done, total)` is called after each.

        Raises:
            PoolBusyError: another process holds the pool's run lock (nothing is written).
        """
        with run_lock(self.ledger.path, "scan"):
            return self._scan(progress)

    def record_snapshot(self, folder: Path, snapshot: Path) -> ScanEntry:
        """Record the files at `snapshot` (a copy of the task folder `folder`, taken later than the scan) as
        the version at `folder`'s pool path, as a scan that read them there would.

        Raises:
            PoolBusyError: another process holds the pool's run lock (nothing is written).
        """
        rel = self.rel(folder)
        with run_lock(self.ledger.path, "scan"):
            head = next((h for h in self.ledger.heads() if h.path == rel), None)
            return self._scan_one(snapshot, rel, head)

    def _scan(self, progress: Callable[[int, int], None] | None) -> ScanReport:
        folders = self.discover()
        heads = {h.path: h for h in self.ledger.heads()}
        report = ScanReport(root=self.root, ledger=self.ledger.path)
        seen: set[str] = set()
        for i, folder in enumerate(folders, 1):
            rel = self.rel(folder)
            seen.add(rel)
            try:
                report.entries.append(self._scan_one(folder, rel, heads.get(rel)))
            except OSError as e:
                report.problems.append(ScanProblem(path=rel, reason=f"cannot read {e.filename or folder}: {e}"))
            if progress:
                progress(i, len(folders))
        report.removed = sorted(set(heads) - seen)
        for path in report.removed:
            self.ledger.remove_head(path)
        return report

    def _scan_one(self, folder: Path, rel: str, head: Head | None) -> ScanEntry:
        try:
            task = Task.load(
                folder, require_solution=self.config.require_solution, max_file_bytes=self.config.max_file_bytes
            )
            version, name, source, error = task.version, task.name, task_source(task.config), None
        except TaskError as e:
            version, error = tree_hash(folder), _error_text(folder, e.path, e.reason)
            name, source = _guess_identity(folder)
        except (OSError, UnicodeError) as e:
            where = Path(getattr(e, "filename", None) or folder)
            version, error = tree_hash(folder), _error_text(folder, where, str(e))
            name, source = _guess_identity(folder)
        status = VersionStatus.INVALID if error else VersionStatus.NEW

        with self.ledger.transaction():
            known = self.ledger.get_version(version)
            if known is not None:
                current = self._revalidate(known, error)
                if head is None or head.version != version:
                    self.ledger.set_head(rel, version)
                    outcome = ScanOutcome.KNOWN
                elif current.status != known.status:
                    outcome = ScanOutcome.REVALIDATED
                else:
                    outcome = ScanOutcome.UNCHANGED
                return self._entry(rel, current, outcome)

            parent = head.version if head else None
            if parent is None and (latest := self.ledger.latest_version(name)) is not None:
                parent = latest.version
            record = TaskVersion(
                version=version,
                name=name,
                source=source,
                parent_version=parent,
                path=rel,
                status=status,
                error=error,
                created_at=utcnow(),
            )
            self.ledger.add_version(record, reason="scan: new version" if not error else f"scan: {error}")
            self.ledger.set_head(rel, version)
            return self._entry(rel, record, ScanOutcome.CHANGED if parent else ScanOutcome.ADDED)

    def _revalidate(self, known: TaskVersion, error: str | None) -> TaskVersion:
        """Bring a recorded version's validity (and error text) in line with what loading it says now."""
        if error is not None and (known.status != VersionStatus.INVALID or known.error != error):
            return self.ledger.set_status(
                known.version, VersionStatus.INVALID, by=StatusWriter.SCAN, reason=f"scan: {error}", error=error
            )
        if error is None and known.status == VersionStatus.INVALID:
            return self.ledger.set_status(
                known.version, VersionStatus.NEW, by=StatusWriter.SCAN, reason="scan: loads now"
            )
        return known

    @staticmethod
    def _entry(rel: str, record: TaskVersion, outcome: ScanOutcome) -> ScanEntry:
        return ScanEntry(
            path=rel,
            name=record.name,
            version=record.version,
            outcome=outcome,
            status=record.status,
            parent_version=record.parent_version,
            error=record.error,
        )

    def list(self, status: VersionStatus | None = None) -> list[TaskRow]:
        """Tasks present in the pool (as of the last scan) with their current version and status."""
        return self.ledger.tasks(status)

    def show(self, name: str) -> TaskHistory:
        """All versions of a task (found by name, pool path, or version prefix) with lineage and results.

        Raises:
            PoolError: nothing matches `name`.
        """
        versions = self.ledger.versions(name=name)
        if not versions:
            head = next((h for h in self.ledger.heads() if h.path == name.strip("/")), None)
            if head is not None:
                versions = [v for v in [self.ledger.get_version(head.version)] if v is not None]
        if not versions and len(name) >= 6:
            versions = self.ledger.find_versions(name)
        if not versions:
            raise PoolError(self.ledger.path, f"no task named {name!r} (nor a pool path or version id like it)")
        family: dict[str, TaskVersion] = {}
        for v in versions:
            if v.version not in family:
                family.update((x.version, x) for x in self.ledger.lineage(v.version))
        ordered = list(family.values())
        ids = set(family)
        return TaskHistory(
            name=versions[-1].name,
            versions=ordered,
            heads=[h for h in self.ledger.heads() if h.version in ids],
            results=[r for v in ordered for r in self.ledger.results(task_version=v.version)],
            findings=[f for v in ordered for f in self.ledger.findings(task_version=v.version)],
            status_log=[c for v in ordered for c in self.ledger.status_log(v.version)],
            rollouts=self.ledger.rollout_tallies(ids),
        )

    def frame(self, table: str = "tasks") -> pl.DataFrame:
        """A ledger table or view as a polars DataFrame (`tasks`: the pool's tasks now)."""
        return self.ledger.frame(table)


def task_source(config: TaskConfig) -> str:
    source = config.source or config.metadata.get("source")
    return str(source) if source else "local"


def _guess_identity(folder: Path) -> tuple[str, str]:
    """(name, source) of a task that did not load: from task.toml when it parses, else the folder name."""
    try:
        config = TaskConfig.from_toml((folder / "task.toml").read_text(encoding="utf-8"))
    except (OSError, UnicodeError, tomllib.TOMLDecodeError, ValidationError, ValueError):
        return folder.name, "local"
    return (config.task.name if config.task else folder.name), task_source(config)


def _error_text(folder: Path, path: Path, reason: str) -> str:
    """'file: reason' with the file relative to the task folder when it is inside it."""
    try:
        shown = path.relative_to(folder).as_posix()
    except ValueError:
        try:
            shown = path.resolve().relative_to(folder.resolve()).as_posix()
        except ValueError:
            shown = str(path)
    return f"{shown}: {reason}"
