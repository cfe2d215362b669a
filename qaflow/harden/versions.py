"""Writing a transform's result as a new task version: the folder, the ledger record and its lineage.

A transform copies its source task to `OUT/<folder>@<transform>` (default OUT: `POOL/.qaflow/hardened`),
edits the copy, and `record` then:
- loads the copy back through `Task.load` (a transform that breaks the Harbor layout fails here);
- saves the requirement graph (declared + tests' reading) as node-link JSON in the copy's
  `.qaflow/requirements.graph.json`: inside the task folder but outside its version hash, so saving it
  again never makes a new version (the declared graph itself is in task.toml, which is hashed);
- records the version (status `new`, parent: the first source, source `harden:<transform>`);
- stores two ledger results on it: `harden:author` (who wrote the change, the transform, every parent)
  and `harden:graph` (difficulty metrics and the graph's queries). The gate reads the author to tell
  other solvers' attempts from the author's own.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from qaflow.errors import TaskError
from qaflow.harden.errors import HardenError
from qaflow.ledger import Ledger
from qaflow.models.probe_key import ProbeKind, probe_name
from qaflow.models.records import Result, ResultKey, TaskVersion, VersionStatus, utcnow
from qaflow.models.trial import ExitStatus
from qaflow.pool import Pool, task_source
from qaflow.requirements.graph import GraphMetrics, RequirementGraph
from qaflow.task import Task, copy_task_folder

AUTHOR_PROBE = probe_name(ProbeKind.HARDEN, "author")
GRAPH_PROBE = probe_name(ProbeKind.HARDEN, "graph")
GRAPH_FILE = Path(".qaflow") / "requirements.graph.json"
PROPOSED_FILE = Path(".qaflow") / "requirements.proposed.json"
DEFAULT_OUT = Path(".qaflow") / "hardened"


class Transform(StrEnum):
    PROCESS_CHAIN = "process_chain"
    COMPOSE = "compose"
    EXPAND = "expand"


class HardenRecord(BaseModel):
    """One transform's outcome: the new version and where it lies."""

    task: str
    transform: Transform
    author: str = Field(description="Who wrote the change: `harden:<transform>` (rules) or `llm:<model>`")
    version: str
    parents: list[str]
    path: str = Field(description="The new task folder")
    pool_path: str = Field(description="The folder relative to the pool root, as the ledger records it")
    recorded: bool = Field(description="False when the ledger already held this version (a rerun)")
    metrics: GraphMetrics
    detail: dict[str, Any] = Field(default_factory=dict)


@contextmanager
def building(source: Path, out_dir: Path, stem: str) -> Iterator[Path]:
    """A fresh copy of `source` at `out_dir/stem` (a previous copy there is replaced) for a transform to edit;
    removed again when the transform fails, so no half-made task is left behind."""
    work = copy_task_folder(source, out_dir / stem)
    try:
        yield work
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise


def check_out_dir(pool: Pool, out_dir: Path) -> Path:
    """The resolved output folder.

    Raises:
        HardenError: it is the pool, inside a task folder, or inside the pool but not under a hidden folder
            (a pool scan would then take the new versions for pool tasks).
    """
    out = out_dir.resolve()
    inside_task = any(out == t or t in out.parents for t in pool.discover())
    visible = pool.root in out.parents and not any(p.startswith(".") for p in out.relative_to(pool.root).parts)
    if out == pool.root or inside_task or visible:
        raise HardenError(out, "a pool scan would take the new versions for pool tasks; use a hidden folder "
                          "such as POOL/.qaflow/hardened, or a folder outside the pool")  # fmt: skip
    return out


def pool_rel(pool: Pool, folder: Path) -> str:
    return Path(os.path.relpath(folder.resolve(), pool.root)).as_posix()


def ensure_recorded(pool: Pool, task: Task) -> TaskVersion:
    """The ledger record of `task`'s version, scanning the pool (or recording the folder) when it has none."""
    known = pool.ledger.get_version(task.version)
    if known is not None:
        return known
    if pool.root in task.path.parents:
        pool.scan()
        known = pool.ledger.get_version(task.version)
        if known is not None:
            return known
    record = TaskVersion(
        version=task.version, name=task.name, source=task_source(task.config), parent_version=None,
        path=pool_rel(pool, task.path), status=VersionStatus.NEW, created_at=utcnow(),
    )  # fmt: skip
    return pool.ledger.add_version(record, reason="harden: recorded as a transform's source")


def record(
    pool: Pool,
    folder: Path,
    *,
    transform: Transform,
    author: str,
    parents: list[TaskVersion],
    run_id: str,
    detail: dict[str, Any] | None = None,
) -> HardenRecord:
    """Record the transformed copy at `folder` as a new version (see the module docstring).

    Raises:
        HardenError: the copy does not load as a task, or has the same files as one of its parents.
    """
    try:
        task = Task.load(folder)
    except TaskError as e:
        raise HardenError(e.path, f"the {transform.value} result is not a valid task: {e.reason}") from e
    if any(p.version == task.version for p in parents):
        raise HardenError(folder, f"the {transform.value} transform changed nothing")
    graph = RequirementGraph.for_task(task)
    graph.save(folder / GRAPH_FILE)
    metrics = graph.metrics()
    ledger = pool.ledger
    rel = pool_rel(pool, folder)
    recorded = ledger.get_version(task.version) is None
    if recorded:
        ledger.add_derived(
            task.version, name=task.name, source=f"harden:{transform.value}", parent=parents[0].version, path=rel,
            reason=f"harden: {transform.value} of {', '.join(p.short for p in parents)} by {author}",
        )  # fmt: skip
    author_payload = {
        "author": author,
        "transform": transform.value,
        "parents": [p.version for p in parents],
        "detail": detail or {},
    }
    _put(ledger, task.version, AUTHOR_PROBE, run_id, author_payload)
    record_graph(ledger, task.version, graph, run_id)
    return HardenRecord(
        task=task.name, transform=transform, author=author, version=task.version,
        parents=[p.version for p in parents], path=str(folder), pool_path=rel, recorded=recorded,
        metrics=metrics, detail=detail or {},
    )  # fmt: skip


def record_graph(ledger: Ledger, version: str, graph: RequirementGraph, run_id: str) -> None:
    """Store the graph's metrics and query answers on `version` (replacing earlier ones)."""
    _put(ledger, version, GRAPH_PROBE, run_id, graph.summary())


def author_of(ledger: Ledger, version: TaskVersion) -> str | None:
    """Who wrote `version`: its `harden:author` result, else a repair's repairer (source `repair:<name>`)."""
    found = ledger.get_result(ResultKey(task_version=version.version, probe=AUTHOR_PROBE, attempt=0))
    if found is not None:
        return str(found.payload.get("author") or "") or None
    if version.source.startswith("repair:"):
        return version.source.removeprefix("repair:")
    return None


def _put(ledger: Ledger, version: str, probe: str, run_id: str, payload: dict[str, Any]) -> None:
    ledger.put_result(
        Result(task_version=version, probe=probe, attempt=0, run_id=run_id, backend="none",
               status=ExitStatus.OK, payload=payload),
        force=True,
    )  # fmt: skip


def resolve_version(pool: Pool, ref: str) -> TaskVersion:
    """The version `ref` names: a task folder, a version id (or a prefix of at least 6 characters), a pool path,
    or a task name (its latest version). A folder whose version is not recorded yet is recorded.

    Raises:
        HardenError: nothing matches, or a prefix matches several versions.
    """
    folder = Path(ref)
    if (folder / "task.toml").is_file():
        try:
            return ensure_recorded(pool, Task.load(folder))
        except TaskError as e:
            raise HardenError(e.path, e.reason) from e
    ledger = pool.ledger
    by_name = ledger.latest_version(ref)
    if by_name is not None:
        return by_name
    head = next((h for h in ledger.heads() if h.path == ref.strip("/")), None)
    if head is not None and (known := ledger.get_version(head.version)) is not None:
        return known
    if len(ref) >= 6:
        found = ledger.find_versions(ref)
        if len(found) == 1:
            return found[0]
        if len(found) > 1:
            raise HardenError(ledger.path, f"{ref!r} matches {len(found)} versions; give more of the id")
    raise HardenError(ledger.path, f"no task folder, version, pool path or task name {ref!r}")
