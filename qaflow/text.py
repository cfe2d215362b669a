"""Reading text the one way qaflow reads it: bytes as UTF-8 text or binary, and a Dockerfile as its
logical lines (Docker's rules: backslash continuations joined, comment lines dropped wherever they
are, blank lines skipped)."""

from __future__ import annotations

from pathlib import Path

MAX_SOURCE_BYTES = 256 * 1024


def utf8_text(data: bytes) -> str | None:
    """The UTF-8 text of `data`, or None for binary content (a NUL byte, or bytes that are not UTF-8)."""
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def folder_texts(folder: Path, max_bytes: int = MAX_SOURCE_BYTES) -> list[tuple[Path, str]]:
    """Each regular file under `folder` (sorted; links skipped: a task's folder is untrusted) with its text, its
    first `max_bytes` decoded as UTF-8 with replacements; unreadable files are skipped."""
    found = []
    for path in sorted(folder.rglob("*")) if folder.is_dir() else []:
        if path.is_file() and not path.is_symlink():
            try:
                with path.open("rb") as fh:
                    found.append((path, fh.read(max_bytes).decode("utf-8", "replace")))
            except OSError:
                continue
    return found


def numbered_dockerfile_lines(text: str) -> list[tuple[int, str]]:
    """(first physical line number, instruction text) per instruction of a Dockerfile.

    As Docker reads it: a line ending in a backslash continues on the next; comment lines (`#` first)
    and blank lines are dropped, inside a continuation too.
    """
    result: list[tuple[int, str]] = []
    current = ""
    start = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if not current:
            start = number
        if stripped.endswith("\\"):
            current += stripped[:-1] + " "
            continue
        current += stripped
        result.append((start, current))
        current = ""
    if current.strip():
        result.append((start, current))
    return result


def dockerfile_logical_lines(text: str) -> list[str]:
    """The instructions of a Dockerfile, one entry each (see `numbered_dockerfile_lines`)."""
    return [line for _, line in numbered_dockerfile_lines(text)]
