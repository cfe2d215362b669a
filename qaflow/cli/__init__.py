"""The `qaflow` command. The typer app is built in `qaflow.cli.root` and loaded on first use, so the
later stages' CLI modules (which import helpers from this package) never see it half-built."""

from __future__ import annotations

import importlib
from typing import Any


def __getattr__(name: str) -> Any:
    if name in ("app", "main"):
        return getattr(importlib.import_module("qaflow.cli.root"), name)
    raise AttributeError(f"module 'qaflow.cli' has no attribute {name!r}")
