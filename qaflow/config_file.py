"""Reading a YAML config file whose relative paths mean "relative to the config file"."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml


def load_yaml_config(
    path: Path, *, what: str, path_keys: Iterable[str] = (), model_keys: Iterable[str] = ()
) -> dict[str, Any]:
    """The mapping in `path`, with every relative path under `path_keys` made absolute from the file's folder,
    and each `model_keys` value too when it names something that exists there (else it stays a hub id).

    Raises:
        OSError: the file cannot be read.
        ValueError: it is not YAML, or does not hold a mapping.
    """
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as e:
        raise ValueError(f"{path}: not valid YAML: {e}") from e
    if not isinstance(data, dict):
        raise ValueError(f"{path}: {what} is a mapping")
    base = Path(path).resolve().parent
    for key in path_keys:
        if isinstance(data.get(key), str) and not Path(data[key]).is_absolute():
            data[key] = str(base / data[key])
    for key in model_keys:
        if isinstance(data.get(key), str) and (base / data[key]).exists():
            data[key] = str(base / data[key])
    return data
