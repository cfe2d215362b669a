"""Config files, read one way: YAML, TOML or JSON (by suffix), relative paths taken from the file's
folder, validated by a pydantic model, and one error format (`ConfigError`: `path: reason`)."""

from __future__ import annotations

import json
import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from qaflow.errors import ConfigError

M = TypeVar("M", bound=BaseModel)


def read_config_data(path: Path, *, what: str, error: type[ConfigError] = ConfigError) -> Any:
    """The parsed contents of `path`: TOML for `.toml`, JSON for `.json`, YAML otherwise (an empty file is {}).

    Raises:
        ConfigError (or `error`): the file cannot be read or parsed.
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
        if path.suffix == ".toml":
            return tomllib.loads(text)
        if path.suffix == ".json":
            return json.loads(text)
        return yaml.safe_load(text) or {}
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, json.JSONDecodeError, yaml.YAMLError) as e:
        raise error(path, f"cannot read {what}: {e}") from e


def resolve_paths(data: dict[str, Any], base: Path, *, path_keys: Iterable[str] = (), model_keys: Iterable[str] = ()):
    """Make each relative path under `path_keys` absolute from `base`, and each `model_keys` value too when
    it names something that exists there (else it stays as written: a hub id)."""
    for key in path_keys:
        if isinstance(data.get(key), str) and not Path(data[key]).is_absolute():
            data[key] = str(base / data[key])
    for key in model_keys:
        if isinstance(data.get(key), str) and (base / data[key]).exists():
            data[key] = str(base / data[key])


def validation_reason(exc: ValidationError) -> str:
    """Every problem of a validation error on one line: `field.path: message; ...`."""
    return "; ".join(f"{'.'.join(str(p) for p in err['loc']) or '(top level)'}: {err['msg']}" for err in exc.errors())


def load_config(
    path: Path | str,
    model: type[M],
    *,
    what: str,
    path_keys: Iterable[str] = (),
    model_keys: Iterable[str] = (),
    list_key: str | None = None,
    error: type[ConfigError] = ConfigError,
) -> M:
    """`model` from the config file at `path`.

    `path_keys`/`model_keys` are top-level keys resolved from the file's folder (see `resolve_paths`);
    deeper paths are the model's job. With `list_key`, a file holding a bare list means `{list_key: list}`.

    Raises:
        ConfigError (or `error`): unreadable, not a mapping, or not valid for `model` (every problem named).
    """
    path = Path(path)
    data = read_config_data(path, what=what, error=error)
    if list_key is not None and isinstance(data, list):
        data = {list_key: data}
    if not isinstance(data, dict):
        shape = f"a mapping with a `{list_key}` list" if list_key else "a mapping"
        raise error(path, f"{what}: expected {shape}, not {type(data).__name__}")
    resolve_paths(data, path.resolve().parent, path_keys=path_keys, model_keys=model_keys)
    try:
        return model.model_validate(data, context={"config_dir": path.resolve().parent})
    except ValidationError as e:
        raise error(path, f"invalid {what}: {validation_reason(e)}") from e


def load_yaml_config(
    path: Path, *, what: str, path_keys: Iterable[str] = (), model_keys: Iterable[str] = ()
) -> dict[str, Any]:
    """The mapping in the config file `path` (YAML, TOML or JSON), relative paths resolved as in
    `load_config`, for callers that adjust the data before validating it themselves.

    Raises:
        ConfigError: the file cannot be read, or does not hold a mapping.
    """
    path = Path(path)
    data = read_config_data(path, what=what)
    if not isinstance(data, dict):
        raise ConfigError(path, f"{what}: expected a mapping, not {type(data).__name__}")
    resolve_paths(data, path.resolve().parent, path_keys=path_keys, model_keys=model_keys)
    return data
