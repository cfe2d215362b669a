"""Help text reflowed for the terminal: docstrings are wrapped at the source's line length, and typer
keeps those line breaks, so `--help` would break sentences mid-way. Here each prose paragraph becomes
one line that rich wraps to the terminal; `Example:` lines and list items keep a line each."""

from __future__ import annotations

import inspect
import re
from typing import Any

import typer
import typer.core

_KEEP = re.compile(r"^(Example:|Examples:|- |\* |\d+\. |\$ )")


NOTE_FOR_READERS = "Long on purpose:"
"""A docstring paragraph for readers of the code (why a function is long): never part of `--help`."""


def reflow(doc: str) -> str:
    """`doc` with the line breaks inside prose paragraphs removed (see the module doc), without the notes
    for readers of the code."""
    paragraphs = []
    for paragraph in inspect.cleandoc(doc).split("\n\n"):
        if paragraph.lstrip().startswith(NOTE_FOR_READERS):
            continue
        lines: list[str] = []
        for line in paragraph.splitlines():
            text = line.strip()
            if lines and not _KEEP.match(text):
                lines[-1] += " " + text  # prose, or a list item's continuation
            else:
                lines.append(text)
        paragraphs.append("\n".join(lines))
    return "\n\n".join(paragraphs)


def reflow_app(app: typer.Typer) -> None:
    """Reflow the help of every command and group of `app`, recursively (before the app first runs)."""
    for command in app.registered_commands:
        doc = command.help or (inspect.getdoc(command.callback) if command.callback else None)
        if doc:
            command.help = reflow(doc)
    for group in app.registered_groups:
        sub = group.typer_instance
        if sub is None:
            continue
        callback = sub.registered_callback
        if callback is not None:
            doc = callback.help or (inspect.getdoc(callback.callback) if callback.callback else None)
            if doc:
                callback.help = reflow(doc)
        if group.help:
            group.help = reflow(group.help)
        reflow_app(sub)


def hide_flag_types() -> None:
    """typer's rich help prints a `<bool>` type next to every flag (`--force <bool>`), which reads as if the
    flag took a value; flags (and counters) show no type here."""
    option = getattr(getattr(typer, "core", None), "TyperOption", None)
    shown = getattr(option, "display_type_rich", None)
    if option is None or shown is None or getattr(shown, "_qaflow", False):
        return

    def display_type_rich(self: Any, ctx: Any) -> str | None:
        return None if self.is_flag or self.count else shown(self, ctx)

    display_type_rich._qaflow = True  # type: ignore[attr-defined]
    option.display_type_rich = display_type_rich
