"""Output helpers shared by CLI commands: JSON for machines, rich for people, exit codes."""

from __future__ import annotations

import sys
from datetime import datetime
from typing import Any, NoReturn

import typer
from pydantic import BaseModel, TypeAdapter
from rich.console import Console
from rich.markup import escape

USAGE_ERROR = 2
"""Exit status for a usage error (bad arguments, missing pool); click uses the same."""


PIPE_WIDTH = 160
"""Console width when output goes to a pipe or file (rich would assume 80 and squeeze tables)."""


def console(stderr: bool = False) -> Console:
    stream = sys.stderr if stderr else sys.stdout
    width = None if stream.isatty() else PIPE_WIDTH
    return Console(stderr=stderr, highlight=False, width=width)


def emit_json(value: BaseModel | list[Any] | dict[str, Any]) -> None:
    """Print JSON on stdout, plain (no rich wrapping), so a machine can parse it."""
    if isinstance(value, BaseModel):
        text = value.model_dump_json(indent=2)
    else:
        text = TypeAdapter(type(value)).dump_json(value, indent=2).decode()
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def usage_error(message: str) -> NoReturn:
    """Print `error: message` on stderr, on one line however long (a path must stay whole), and exit with
    the usage-error status."""
    console(stderr=True).print(f"[red]error:[/red] {escape(message)}", markup=True, soft_wrap=True)
    raise typer.Exit(USAGE_ERROR)


def short(version: str | None) -> str:
    return version[:12] if version else "-"


def when(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S") if value else "-"
