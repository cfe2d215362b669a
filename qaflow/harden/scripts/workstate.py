"""The state of a task's workdir, for process-chained tasks (qaflow harden): snapshot, changes, report.

Copied into the task's tests/ and solution/ as `qaflow_workstate.py`; python3 standard library only.
A snapshot maps every regular file and symlink under the workdir (path relative to it, POSIX) to
the sha256 of its bytes (a symlink: of its target's text). Not part of the state: the process
folder, `.git`, `__pycache__` and tool caches, `*.pyc`/`*.pyo` files, and anything that is not a
file or a symlink. The report is a function of the initial snapshot and the final state, so the
checker and the reference solution agree on it by construction.

Usage: python3 workstate.py snapshot WORKDIR PROCESS_FOLDER   (prints the snapshot as JSON)
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import sys
from collections.abc import Iterator

SKIP_DIRS = frozenset({"__pycache__", ".git", ".pytest_cache", ".mypy_cache", ".ruff_cache"})
SKIP_SUFFIXES = (".pyc", ".pyo")
REPORT_KEYS = ("plan_sha256", "log_sha256", "log_entries", "files", "deleted", "counts")
FILE_KEYS = ("path", "change", "sha256", "bytes", "lines")


def chunks(path: str) -> Iterator[bytes]:
    """What stands for `path`: a symlink's target text, else the file's bytes (read 1 MiB at a time)."""
    if os.path.islink(path):
        yield os.readlink(path).encode("utf-8", "surrogateescape")
        return
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            yield chunk


def facts(path: str) -> tuple[str, int, int]:
    """(sha256, bytes, lines) of `path`; lines count newline characters, plus one for a last line without one."""
    digest, size, newlines, last = hashlib.sha256(), 0, 0, b""
    for chunk in chunks(path):
        digest.update(chunk)
        size += len(chunk)
        newlines += chunk.count(b"\n")
        last = chunk[-1:]
    return digest.hexdigest(), size, newlines + (1 if size and last != b"\n" else 0)


def skipped(rel: str, folder: str) -> bool:
    parts = rel.split("/")
    return parts[0] == folder or any(p in SKIP_DIRS for p in parts) or parts[-1].endswith(SKIP_SUFFIXES)


def snapshot(workdir: str, folder: str) -> dict[str, str]:
    """{relative path: sha256} of the workdir's state."""
    state: dict[str, str] = {}
    for root, dirs, files in os.walk(workdir):
        rel_root = os.path.relpath(root, workdir)
        rel_root = "" if rel_root == "." else rel_root.replace(os.sep, "/") + "/"
        kept = []
        for name in sorted(dirs):
            full = os.path.join(root, name)
            if skipped(rel_root + name, folder):
                continue
            if os.path.islink(full):
                files.append(name)
            else:
                kept.append(name)
        dirs[:] = kept
        for name in sorted(files):
            rel = rel_root + name
            full = os.path.join(root, name)
            if skipped(rel, folder):
                continue
            mode = os.lstat(full).st_mode
            if stat.S_ISREG(mode) or stat.S_ISLNK(mode):
                state[rel] = facts(full)[0]
    return state


def changes(before: dict[str, str], after: dict[str, str]) -> tuple[list[str], list[str], list[str]]:
    """(created, modified, deleted) relative paths, each sorted."""
    created = sorted(p for p in after if p not in before)
    modified = sorted(p for p in after if p in before and before[p] != after[p])
    deleted = sorted(p for p in before if p not in after)
    return created, modified, deleted


def build_report(
    workdir: str, before: dict[str, str], after: dict[str, str], plan_bytes: bytes, log_bytes: bytes
) -> dict[str, object]:
    """The report.json that the final state, the plan and the log call for."""
    created, modified, deleted = changes(before, after)
    files = []
    for rel in sorted(created + modified):
        digest, size, lines = facts(os.path.join(workdir, rel))
        files.append(
            {
                "path": rel,
                "change": "created" if rel in created else "modified",
                "sha256": digest,
                "bytes": size,
                "lines": lines,
            }
        )
    entries = [line for line in log_bytes.decode("utf-8", "replace").splitlines() if line.strip()]
    return {
        "plan_sha256": hashlib.sha256(plan_bytes).hexdigest(),
        "log_sha256": hashlib.sha256(log_bytes).hexdigest(),
        "log_entries": len(entries),
        "files": files,
        "deleted": deleted,
        "counts": {"created": len(created), "modified": len(modified), "deleted": len(deleted)},
    }


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] != "snapshot":
        sys.exit("usage: workstate.py snapshot WORKDIR PROCESS_FOLDER")
    print(json.dumps(snapshot(sys.argv[2], sys.argv[3]), sort_keys=True))
