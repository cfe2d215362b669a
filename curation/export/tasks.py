"""Task-pool export: one row per task with every file of its folder, so the task can be rebuilt from the row.

A file is stored as text (`content`) when it is UTF-8 without NUL bytes, else as bytes
(`content_bytes`); a symlink as its target text. Files over the size cap are left out and listed
in `skipped`; `complete` says whether the row's files hash to the task's version (then
`rows_to_task_dir` rebuilds the very same version).
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from datasets import Features, List, Value

from curation.export import card as cards
from curation.export.common import (
    DEFAULT_MAX_SHARD_BYTES,
    ExportError,
    ExportKind,
    ExportReport,
    NothingToExport,
    Provenance,
    RemovalReason,
    Removed,
    SplitSpec,
    dataset_from_rows,
    open_pool,
    prepare_out_dir,
    select_tasks,
    split_rows,
    value_counts,
    write_export,
)
from curation.export.facts import FACT_COLUMNS, pool_facts, with_default_licence, with_sources
from curation.export.limits import DEFAULT_MAX_TASK_FILE_BYTES
from qaflow.errors import TaskError
from qaflow.models.records import TaskRow
from qaflow.pool import Pool
from qaflow.task import IGNORED_NAMES, Task, tree_hash
from qaflow.text import utf8_text

FILE_FEATURE = {
    "path": Value("string"),
    "kind": Value("string"),
    "mode": Value("int64"),
    "size": Value("int64"),
    "sha256": Value("string"),
    "is_text": Value("bool"),
    "content": Value("string"),
    "content_bytes": Value("binary"),
}
SKIPPED_FEATURE = {"path": Value("string"), "size": Value("int64"), "reason": Value("string")}
TASKS_FEATURES = Features(
    {
        "name": Value("string"),
        "version": Value("string"),
        "path": Value("string"),
        "source": Value("string"),
        "status": Value("string"),
        "parent_version": Value("string"),
        "instruction": Value("string"),
        "task_toml": Value("string"),
        "dockerfile": Value("string"),
        "files": List(FILE_FEATURE),
        "skipped": List(SKIPPED_FEATURE),
        "complete": Value("bool"),
        "licence": Value("string"),
        "audit_verdict": Value("string"),
        "audit_run": Value("string"),
    }
)
TASKS_COLUMNS = {
    "version": "sha256 of the task's files (paths and bytes): the version id.",
    "path": "Task folder relative to the pool root.",
    "status": "Status of this version in the pool's ledger (accepted, needs_repair, ...).",
    "instruction": "The instruction (all steps' instructions for a multi-step task); null if the task does not load.",
    "task_toml": "task.toml as text.",
    "dockerfile": "environment/Dockerfile as text.",
    "files": "Every file: path, kind (file or symlink), mode, size, sha256, and its text (`content`) or, "
    "for binary files, its bytes (`content_bytes`); a symlink's content is its target.",
    "skipped": "Files left out (over the size cap, or not a regular file), with the reason.",
    "complete": "The files hash to `version`: `rows_to_task_dir` rebuilds this exact version.",
    "licence": FACT_COLUMNS["licence"],
    "audit_verdict": FACT_COLUMNS["audit_verdict"],
    "audit_run": FACT_COLUMNS["audit_run"],
}


def _walk(root: Path) -> list[Path]:
    """The entries `qaflow.task.tree_hash` hashes: regular files, symlinks (to dirs too, not followed), specials."""
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if d not in IGNORED_NAMES)
        base = Path(dirpath)
        found += [base / d for d in dirnames if (base / d).is_symlink()]
        found += [base / f for f in sorted(filenames) if f not in IGNORED_NAMES]
    return sorted(found)


def _file_entry(path: Path, rel: str, max_file_bytes: int) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """(file entry, None) or (None, skipped entry) for one path."""
    st = path.lstat()
    if stat.S_ISLNK(st.st_mode):
        target = os.readlink(path)
        data, kind = target.encode(), "symlink"
    elif stat.S_ISREG(st.st_mode):
        if st.st_size > max_file_bytes:
            return None, {"path": rel, "size": st.st_size, "reason": f"over the {max_file_bytes}-byte cap"}
        data, kind = path.read_bytes(), "file"
    else:
        return None, {"path": rel, "size": st.st_size, "reason": "not a regular file or symlink"}
    text = utf8_text(data)
    entry = {
        "path": rel,
        "kind": kind,
        "mode": stat.S_IMODE(st.st_mode),
        "size": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
        "is_text": text is not None,
        "content": text,
        "content_bytes": None if text is not None else data,
    }
    return entry, None


def _entry_bytes(entry: dict[str, Any]) -> bytes:
    return entry["content"].encode("utf-8") if entry["is_text"] else entry["content_bytes"]


def files_hash(files: Sequence[dict[str, Any]]) -> str:
    """`tree_hash` of the folder these file entries rebuild (same framing and order)."""
    digest = hashlib.sha256()
    for entry in sorted(files, key=lambda e: PurePosixPath(e["path"])):
        kind = b"L" if entry["kind"] == "symlink" else b"F"
        digest.update(entry["path"].encode() + b"\0" + kind + hashlib.sha256(_entry_bytes(entry)).digest())
    return digest.hexdigest()


def task_row(entry: TaskRow, folder: Path, *, max_file_bytes: int = DEFAULT_MAX_TASK_FILE_BYTES) -> dict[str, Any]:
    """The dataset row of one pool task (its folder read now)."""
    files, skipped = [], []
    for path in _walk(folder):
        file, skip = _file_entry(path, path.relative_to(folder).as_posix(), max_file_bytes)
        if file is not None:
            files.append(file)
        if skip is not None:
            skipped.append(skip)
    texts = {f["path"]: f["content"] for f in files if f["kind"] == "file"}
    try:
        instruction: str | None = Task.load(folder, require_solution=False).instruction
    except (TaskError, OSError, UnicodeError):
        instruction = texts.get("instruction.md")
    return {
        "name": entry.name,
        "version": entry.version,
        "path": entry.path,
        "source": entry.source,
        "status": entry.status.value,
        "parent_version": entry.parent_version,
        "instruction": instruction,
        "task_toml": texts.get("task.toml"),
        "dockerfile": texts.get("environment/Dockerfile"),
        "files": files,
        "skipped": skipped,
        "complete": not skipped and files_hash(files) == entry.version,
    }


def export_tasks(
    pool: Pool | Path | str,
    out_dir: Path,
    *,
    status: Sequence[str] | None = ("accepted",),
    max_file_bytes: int = DEFAULT_MAX_TASK_FILE_BYTES,
    licences: Mapping[str, str | None] | None = None,
    split: SplitSpec | None = None,
    provenance: Provenance | None = None,
    license: str | None = None,
    sources: Mapping[str, str] | None = None,
    overwrite: bool = False,
    max_shard_bytes: int = DEFAULT_MAX_SHARD_BYTES,
) -> ExportReport:
    """Write the pool's tasks whose current version has one of `status` (None: all) to `out_dir`, one row each.

    `sources` (task version -> source name, as a pipeline knows it) wins over the pool's source (task.toml's, else
    `local`); every licence is written as the Hub spells it (`apache-2.0`).

    A task whose folder is gone or no longer holds the scanned version is left out with a reason.

    Raises:
        ExportError: no pool ledger, unknown status, `out_dir` is a non-empty folder (without
            `overwrite`), or no task is left to export.
    """
    out_dir = Path(out_dir)
    prepare_out_dir(out_dir, overwrite=overwrite)
    opened = open_pool(pool)
    root = opened.root
    rows: list[dict[str, Any]] = []
    removed: list[Removed] = []
    try:
        facts = pool_facts(opened, licences)
        for entry in select_tasks(opened, status):
            folder = opened.root / entry.path
            if not folder.is_dir():
                detail = f"{entry.path}: no such folder; run `qaflow pool scan`"
                removed.append(
                    Removed(id=entry.version, task=entry.name, reason=RemovalReason.MISSING_FOLDER, detail=detail)
                )
                continue
            try:
                now = tree_hash(folder)
                row = task_row(entry, folder, max_file_bytes=max_file_bytes) if now == entry.version else None
            except OSError as e:
                detail = f"{entry.path}: cannot read {e.filename or folder}: {e.strerror or e}"
                removed.append(
                    Removed(id=entry.version, task=entry.name, reason=RemovalReason.UNEXPORTABLE, detail=detail)
                )
                continue
            if row is None:
                detail = f"{entry.path} now holds version {now[:12]}, not {entry.short}; run `qaflow pool scan`"
                removed.append(
                    Removed(id=entry.version, task=entry.name, reason=RemovalReason.CHANGED_SINCE_SCAN, detail=detail)
                )
                continue
            known = facts[entry.version]
            rows.append(row | {k: v for k, v in known.columns().items() if k != "task_status"})
    finally:
        if opened is not pool:
            opened.close()
    with_default_licence(rows, license)
    with_sources(rows, sources, key="version")
    if not rows:
        wanted = "any status" if status is None else ", ".join(status)
        what = f"no task of {root} has status {wanted}" if not removed else f"all {len(removed)} tasks removed"
        raise NothingToExport(out_dir, f"nothing to export: {what}", removed)
    incomplete = [r for r in rows if not r["complete"]]
    notes = [f"{len(incomplete)} rows are incomplete (files skipped): {', '.join(r['name'] for r in incomplete)}"]
    report = ExportReport(
        kind=ExportKind.TASKS,
        out_dir=out_dir,
        rows=len(rows),
        removed=removed,
        counts={key: value_counts(rows, key) for key in ("source", "licence", "status", "audit_verdict")},
        notes=notes if incomplete else [],
        provenance=provenance or Provenance.for_api([root]),
    )
    parts = split_rows(rows, split, key="name")
    configs = {"default": {name: dataset_from_rows(part, TASKS_FEATURES) for name, part in parts.items()}}

    def card(done: ExportReport) -> str:
        return _tasks_card(done, license)

    return write_export(configs, out_dir, report, card=card, overwrite=overwrite, max_shard_bytes=max_shard_bytes)


def rows_to_task_dir(row: dict[str, Any], dest: Path, *, allow_incomplete: bool = False) -> Path:
    """Rebuild the task folder of an exported row at `dest` (which must not exist or be empty).

    Raises:
        ExportError: the row is incomplete (without `allow_incomplete`), a file path would leave
            `dest`, a file's bytes do not match its sha256, or `dest` is not empty.
    """
    dest = Path(dest)
    name = f"{row['name']} {str(row['version'])[:12]}"
    if not row["complete"] and not allow_incomplete:
        left_out = ", ".join(s["path"] for s in row["skipped"]) or "none (the files do not hash to the version)"
        raise ExportError(dest, f"row of {name} is incomplete (skipped: {left_out}); pass allow_incomplete=True")
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise ExportError(dest, "exists and is not an empty folder")
    for entry in row["files"]:
        rel = PurePosixPath(entry["path"])
        if rel.is_absolute() or not rel.parts or ".." in rel.parts:
            raise ExportError(dest, f"row of {name} holds the unsafe path {entry['path']!r}")
        data = _entry_bytes(entry)
        if hashlib.sha256(data).hexdigest() != entry["sha256"]:
            raise ExportError(dest, f"row of {name}: {entry['path']} does not match its sha256")
    for entry in row["files"]:
        target = dest.joinpath(*PurePosixPath(entry["path"]).parts)
        target.parent.mkdir(parents=True, exist_ok=True)
        if entry["kind"] == "symlink":
            target.symlink_to(entry["content"])
        else:
            target.write_bytes(_entry_bytes(entry))
            target.chmod(entry["mode"])
    dest.mkdir(parents=True, exist_ok=True)
    return dest


def _tasks_card(report: ExportReport, license: str | None) -> str:
    head = cards.front_matter(
        pretty_name="qaflow task pool",
        configs=report.configs,
        digest=report.content_digest,
        splits=report.splits,
        license=license or cards.row_licences(report.counts),
        tags=["agentic-coding", "harbor", "tasks"],
    )
    loading = """
```python
from datasets import load_dataset
from curation.export import rows_to_task_dir

ds = load_dataset("OUT")  # a DatasetDict: train (and test, when the export made one)
row = ds["train"][0]
rows_to_task_dir(row, "rebuilt/" + row["name"].replace("/", "__"))  # a Harbor task folder
```

As a qaflow source (the same task versions come back): `{kind: tasks_export, name: mine, path: OUT}`.
"""
    sections = [
        ("Loading", loading),
        ("Columns", cards.columns_table(TASKS_FEATURES, TASKS_COLUMNS)),
        ("Splits", cards.splits_section(report.splits, report.splits)),
        ("Files", cards.files_list(report.files)),
        ("Counts", f"{report.rows} tasks.\n\n" + cards.counts_tables(report.counts)),
        ("Removed", cards.removed_table(report.removed_by_reason)),
    ]
    if report.notes:
        sections.append(("Notes", "\n".join(f"- {n}" for n in report.notes)))
    sections.append(("Provenance", cards.provenance_section(report.provenance)))
    intro = "Agentic-coding tasks (Harbor layout) exported by qaflow: one row per task, with every file of its folder."
    return cards.render_card(head, "qaflow task pool", intro, sections)
