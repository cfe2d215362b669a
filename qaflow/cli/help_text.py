"""Help text reflowed for the terminal: docstrings are wrapped at the source's line length, and typer
keeps those line breaks, so `--help` would break sentences mid-way. Here each prose paragraph becomes
one line that rich wraps to the terminal; `Example:` lines and list items keep a line each."""

from __future__ import annotations

import inspect
import re

import typer

_KEEP = re.compile(r"^(Example:|Examples:|- |\* |\d+\. |\$ )")


def reflow(doc: str) -> str:
    """`doc` with the line breaks inside prose paragraphs removed (see the module doc)."""
    paragraphs = []
    for paragraph in inspect.cleandoc(doc).split("\n\n"):
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
