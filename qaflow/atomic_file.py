"""Writing a report file whole or not at all: a temporary file beside it, flushed, then renamed over it."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def write_text_atomic(path: Path, text: str) -> None:
    """Write `text` (UTF-8) to `path` so that a reader, or a process killed meanwhile, sees the old file or the
    new one, never a part: the bytes go to a temporary file in the same folder, then `os.replace`.

    Raises:
        OSError: the folder cannot take the file (nothing at `path` changed).
        UnicodeEncodeError: `text` is not encodable (nothing at `path` changed).
    """
    data = text.encode("utf-8")
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
