"""What the LLM roles see of a task: its files (contents capped) and findings as JSON, rendered by
jinja2 templates (StrictUndefined, so a missing variable fails loudly) from `qaflow/repair/prompts/`."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2
from pydantic import BaseModel, Field

from qaflow.models.audit import AuditFinding
from qaflow.task import IGNORED_NAMES
from qaflow.text import utf8_text

FILE_CAP = 8_000
"""Characters of one file shown in a prompt; longer files are cut with a note."""


class FileView(BaseModel):
    """One task file as shown to a model."""

    path: str = Field(description="Task-relative POSIX path.")
    size: int
    content: str | None = Field(None, description="Text (capped); None for binary files and symlinks.")
    truncated: bool = False
    note: str = ""


def list_task_files(root: Path) -> list[str]:
    """Task-relative paths of every file under `root` (symlinked folders are listed, not entered)."""
    found: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root):
        base = Path(dirpath)
        dirnames[:] = sorted(d for d in dirnames if d not in IGNORED_NAMES and not (base / d).is_symlink())
        found += [(base / n).relative_to(root).as_posix() for n in filenames if n not in IGNORED_NAMES]
        found += [(base / d).relative_to(root).as_posix() for d in os.listdir(base) if (base / d).is_symlink()]
    return sorted(set(found))


def view_file(root: Path, rel: str, cap: int = FILE_CAP) -> FileView:
    path = root / rel
    if path.is_symlink():
        return FileView(path=rel, size=0, note=f"symlink -> {os.readlink(path)}")
    data = path.read_bytes()
    text = utf8_text(data)
    if text is None:
        return FileView(path=rel, size=len(data), note="binary" if b"\0" in data else "not UTF-8")
    if len(text) > cap:
        return FileView(path=rel, size=len(data), content=text[:cap], truncated=True, note=f"first {cap} characters")
    return FileView(path=rel, size=len(data), content=text)


def task_files(root: Path, *, under: Iterable[str] | None = None, cap: int = FILE_CAP) -> list[FileView]:
    """Views of the task's files, optionally only those under the given top-level folders/files."""
    prefixes = tuple(under) if under is not None else None
    rels = [r for r in list_task_files(root) if prefixes is None or r.split("/", 1)[0] in prefixes]
    return [view_file(root, r, cap) for r in rels]


def findings_json(findings: Iterable[AuditFinding]) -> str:
    return json.dumps([f.model_dump(mode="json") for f in findings], indent=2)


@cache
def _env() -> jinja2.Environment:
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True, autoescape=False)
    env.filters["tojson_pretty"] = lambda v: json.dumps(v, indent=2, default=str)
    return env


def render(template: str, **variables: Any) -> str:
    """Render `prompts/<template>.j2`.

    Raises:
        jinja2.UndefinedError: the template uses a variable that was not given.
    """
    text = resources.files("qaflow.repair").joinpath("prompts", f"{template}.j2").read_text(encoding="utf-8")
    return _env().from_string(text).render(**variables).strip() + "\n"
