"""Output helpers shared by CLI commands: JSON for machines, rich for people, exit codes."""

from __future__ import annotations

import sys
from datetime import datetime
from pathlib import Path
from typing import Any, NoReturn

import typer
from pydantic import BaseModel, TypeAdapter
from rich.console import Console
from rich.markup import escape
from rich.text import Text

from qaflow.atomic_file import write_text_atomic

USAGE_ERROR = 2
"""Exit status for a usage error (bad arguments, missing pool); click uses the same."""


PIPE_WIDTH = 160
"""Console width for tables when output goes to a pipe or file (rich would assume 80 and squeeze them);
lines of text are never wrapped there (`console`)."""


def console(stderr: bool = False) -> Console:
    """A rich console for people. Off a terminal (a log file, a pipe) text lines are never hard-wrapped: an
    `error:` line or a summary stays one line whatever its length; tables are laid out at `PIPE_WIDTH`."""
    stream = sys.stderr if stderr else sys.stdout
    if stream.isatty():
        return Console(stderr=stderr, highlight=False)
    return _UnwrappedConsole(stderr=stderr, highlight=False, width=PIPE_WIDTH)


class _UnwrappedConsole(Console):
    """`print` of text with `soft_wrap=True` unless told otherwise: a line is not broken at the console
    width (tables and other renderables are laid out at it as usual)."""

    def print(self, *objects: Any, soft_wrap: bool | None = None, **kwargs: Any) -> None:
        if soft_wrap is None:
            soft_wrap = all(isinstance(o, str | Text) for o in objects)
        super().print(*objects, soft_wrap=soft_wrap, **kwargs)


def emit_json(value: BaseModel | list[Any] | dict[str, Any], to: str | None = "-") -> None:
    """JSON for machines, plain (no rich wrapping): on stdout when `to` is `-` (or None), else into the file
    `to` (the value of `--json`, `options.JsonOpt`); an unwritable file is a usage error naming it."""
    if isinstance(value, BaseModel):
        text = value.model_dump_json(indent=2)
    else:
        text = TypeAdapter(type(value)).dump_json(value, indent=2).decode()
    write_json_text(text, to)


def write_json_text(text: str, to: str | None = "-") -> None:
    """`text` (JSON already serialised) on stdout (`to` `-` or None) or into the file `to`, whole or not at
    all (a temporary file beside it, then a rename)."""
    if to is None or to == "-":
        sys.stdout.write(text + "\n")
        sys.stdout.flush()
        return
    try:
        write_text_atomic(Path(to), text + "\n")
    except OSError as e:
        usage_error(f"{to}: cannot write the JSON ({e.strerror or e})")


def json_to_stdout(to: str | None) -> bool:
    """Whether `--json` asked for stdout (then people's output goes to stderr)."""
    return to == "-"


def usage_error(message: str) -> NoReturn:
    """Print `error: message` on stderr, on one line however long (a path must stay whole; a message of several
    lines, such as a validation error's, is joined with `; `), and exit with the usage-error status."""
    line = "; ".join(part.strip() for part in message.splitlines() if part.strip())
    console(stderr=True).print(f"[red]error:[/red] {escape(line)}", markup=True, soft_wrap=True)
    raise typer.Exit(USAGE_ERROR)


def short(version: str | None) -> str:
    return version[:12] if version else "-"


def when(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S") if value else "-"
