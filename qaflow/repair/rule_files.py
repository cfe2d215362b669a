"""The files rule repairs read and write: task-relative POSIX paths to text, read from a task copy.

By default: task.toml and the UTF-8 text files of the verifier's folders (tests/, steps/*/tests/).
With `whole_task=True` also the instructions and the reference solutions (their text files: a rule
can tell what else names a path) and the build context environment/, every file of it: its UTF-8
text files as text, anything else (binary, over the size limit, a symlink) as `NOT_TEXT`, so a rule
can tell a folder it would copy is complete and give up where it is not. A change of None deletes a file.
"""

from __future__ import annotations

import re
from pathlib import Path

from qaflow.task import IGNORED_NAMES
from qaflow.text import utf8_text

TaskFiles = dict[str, str]
"""Task-relative POSIX path -> text, for task.toml, the verifier's files and (when read) environment/."""
TaskChanges = dict[str, str | None]
"""What a rule changes: the new text of a file, or None to delete it."""

MAX_RULE_FILE_BYTES = 1 << 20
NOT_TEXT = "\udc00 not a UTF-8 text file"
"""The value of an environment/ file that is not readable as UTF-8 text. A lone surrogate: no file
decodes to it, and it cannot be encoded, so it is never written by mistake."""
ENVIRONMENT = "environment/"


def verifier_dir(rel: str) -> bool:
    """Whether `rel` lies in a verifier folder: tests/ or steps/<name>/tests/."""
    parts = rel.split("/")
    return parts[0] == "tests" or (len(parts) > 3 and parts[0] == "steps" and parts[2] == "tests")


def is_shell(rel: str, text: str) -> bool:
    """A shell script: by its extension, or an extension-less file with a sh/bash shebang."""
    return rel.endswith((".sh", ".bash")) or (
        "." not in rel.rsplit("/", 1)[-1] and re.match(r"#!.*\b(ba|da|z)?sh\b", text) is not None
    )


def is_text(text: str | None) -> bool:
    return text is not None and text != NOT_TEXT


def read_rule_files(work_dir: Path, *, whole_task: bool = False) -> TaskFiles:
    """task.toml and every UTF-8 text file of the verifier folders (tests/, steps/*/tests/); with
    `whole_task`, also those of the instructions and solutions, and every file of environment/
    (`NOT_TEXT` for those that are not text)."""
    files: TaskFiles = {}
    candidates = [
        work_dir / "task.toml",
        *sorted(work_dir.glob("tests/**/*")),
        *sorted(work_dir.glob("steps/*/tests/**/*")),
    ]
    if whole_task:
        candidates += [
            work_dir / "instruction.md",
            *sorted(work_dir.glob("steps/*/instruction.md")),
            *sorted(work_dir.glob("solution/**/*")),
            *sorted(work_dir.glob("steps/*/solution/**/*")),
        ]
    for path in candidates:
        if not path.is_file() or path.is_symlink() or path.stat().st_size > MAX_RULE_FILE_BYTES:
            continue
        try:
            files[path.relative_to(work_dir).as_posix()] = path.read_bytes().decode("utf-8")
        except UnicodeDecodeError:
            continue
    if whole_task:
        files.update(_environment_files(work_dir))
    return files


def _environment_files(work_dir: Path) -> TaskFiles:
    files: TaskFiles = {}
    root = work_dir / "environment"
    for path in sorted(root.glob("**/*")):
        rel = path.relative_to(work_dir)
        if IGNORED_NAMES & set(rel.parts) or (path.is_dir() and not path.is_symlink()):
            continue
        text = None
        if path.is_file() and not path.is_symlink() and path.stat().st_size <= MAX_RULE_FILE_BYTES:
            text = utf8_text(path.read_bytes())
        files[rel.as_posix()] = NOT_TEXT if text is None else text
    return files


def write_rule_changes(work_dir: Path, changes: TaskChanges) -> None:
    """Write each changed file (its folders made as needed) and delete each None."""
    for rel, text in sorted(changes.items()):
        path = work_dir / rel
        if text is None:
            path.unlink(missing_ok=True)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(text.encode("utf-8"))
