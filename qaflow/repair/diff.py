"""Unified diffs between two task folders, computed by qaflow itself (a repairer's list of changed
files is a claim; this is the record)."""

from __future__ import annotations

import difflib
import os
from pathlib import Path

from qaflow.task import IGNORED_NAMES
from qaflow.text import utf8_text

DIFF_CAP = 30_000
"""Characters of diff kept in a round's record; the rest is cut with a note."""


def _files(root: Path) -> dict[str, Path]:
    found: dict[str, Path] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in IGNORED_NAMES)
        base = Path(dirpath)
        names = [*filenames, *(d for d in dirnames if (base / d).is_symlink())]
        for name in names:
            if name not in IGNORED_NAMES:
                path = base / name
                found[path.relative_to(root).as_posix()] = path
    return found


def _content(path: Path | None) -> bytes | None:
    if path is None:
        return None
    if path.is_symlink():
        return b"symlink -> " + os.readlink(path).encode()
    return path.read_bytes()


def _lines(data: bytes | None) -> list[str] | None:
    """Text lines, or None for binary (undecodable or NUL-holding) content."""
    if data is None:
        return []
    text = utf8_text(data)
    return None if text is None else text.splitlines(keepends=True)


def folder_diff(old: Path, new: Path, *, cap: int = DIFF_CAP) -> tuple[str, list[str]]:
    """(unified diff old -> new, capped at `cap` characters; task-relative paths that differ)."""
    a, b = _files(old), _files(new)
    parts: list[str] = []
    changed: list[str] = []
    for rel in sorted(set(a) | set(b)):
        before, after = _content(a.get(rel)), _content(b.get(rel))
        if before == after:
            continue
        changed.append(rel)
        old_name = f"a/{rel}" if rel in a else "/dev/null"
        new_name = f"b/{rel}" if rel in b else "/dev/null"
        old_lines, new_lines = _lines(before), _lines(after)
        if old_lines is None or new_lines is None:
            parts.append(f"Binary files {old_name} and {new_name} differ\n")
            continue
        for line in difflib.unified_diff(old_lines, new_lines, old_name, new_name):
            parts.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    text = "".join(parts)
    if len(text) > cap:
        text = text[:cap] + f"\n... diff cut at {cap} of {len(text)} characters\n"
    return text, changed
