"""CLI: `qaflow import tb SRC DST`. A task that fails to convert is reported (exit 0); usage errors exit 2."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table

from qaflow.cli.output import console, emit_json, short, usage_error
from qaflow.tb_import import ImportReport, ImportStatus, TbImportError, import_tb

app = typer.Typer(no_args_is_help=True)


@app.callback()
def _group() -> None:
    """Import tasks from other formats into the Harbor layout."""


@app.command()
def tb(
    src: Path = typer.Argument(..., help="A Terminal-Bench task folder, or a folder of them (any depth)."),
    dst: Path = typer.Argument(..., help="Folder to write the Harbor tasks into, one DST/<id> per task."),
    force: bool = typer.Option(False, "--force", help="Replace DST/<id> when it exists with different content."),
    as_json: bool = typer.Option(False, "--json", help="Print the import report as JSON."),
) -> None:
    """Convert Terminal-Bench tasks (task.yaml, solution.sh, run-tests.sh, tests/) to Harbor tasks.

    Each result is validated by loading it. A task that cannot be converted is reported with the
    file and reason, and the others are still converted.

    Example: qaflow import tb ./terminal-bench/tasks ./pool/tb --json
    """
    try:
        report = import_tb(src, dst, force=force)
    except TbImportError as e:
        usage_error(str(e))
    if as_json:
        emit_json(report)
        return
    _print_report(report)


def _print_report(report: ImportReport) -> None:
    out = console()
    table = Table("id", "status", "version", "dest")
    for e in report.entries:
        table.add_row(
            escape(e.source.name),
            e.status.value,
            short(e.version),
            escape(str(e.dest or "-")),
            style="red" if e.status == ImportStatus.FAILED else None,
        )
    out.print(table)
    for e in report.entries:
        if e.error:
            out.print(f"[red]failed[/red] {escape(e.source.name)}: {escape(e.error)}")
        for warning in e.warnings:
            out.print(f"[yellow]warning[/yellow] {escape(e.source.name)}: {escape(warning)}")
    out.print(report.summary())
