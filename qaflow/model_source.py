"""Where a model comes from: a local folder, or a Hugging Face hub id. A name that reads as a path and
does not exist is an error at once, never a hub id to try (and retry) over the network."""

from __future__ import annotations

from pathlib import Path

from qaflow.errors import PathError


class ModelPathError(PathError):
    """A model named by a local path that does not exist."""


def reads_as_path(name: str, base: Path | None = None) -> bool:
    """True when `name` can only be a path: absolute, `./`, `../` or `~`, not `org/name` shaped, or its
    first part is a folder here (or under `base`, the folder of the config that named it)."""
    if name.startswith(("/", "./", "../", "~")) or name in (".", ".."):
        return True
    parts = Path(name).parts
    if len(parts) != 2:
        return len(parts) > 2
    return Path(parts[0]).is_dir() or (base is not None and (base / parts[0]).is_dir())


def model_source(name: str | Path, *, base: Path | None = None) -> str:
    """`name` as `from_pretrained` should get it: an existing local folder (absolute), or a hub id.

    Raises:
        ModelPathError: `name` reads as a path (see `reads_as_path`) and there is no such folder.
    """
    text = str(name)
    for candidate in (Path(text).expanduser(), (base / text) if base is not None else None):
        if candidate is not None and candidate.exists():
            return str(candidate.resolve())
    if reads_as_path(text, base):
        raise ModelPathError(Path(text).expanduser(), "no such model folder (a path, so not tried as a hub id)")
    return text
