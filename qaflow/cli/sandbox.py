"""CLI: `qaflow sandbox doctor` and `qaflow sandbox reap`."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from qaflow.errors import SandboxUnavailableError
from qaflow.sandbox import backend_class, check_backend, resolve_backend

app = typer.Typer(no_args_is_help=True, help="Inspect and clean up sandbox backends.")


@app.command()
def doctor(as_json: Annotated[bool, typer.Option("--json", help="Print JSON")] = False) -> None:
    """Say which backends work on this machine, and why not.

    Example: qaflow sandbox doctor
    """
    report: dict[str, dict[str, object]] = {}
    for name in ("docker", "bwrap"):
        ok, reason = check_backend(name)
        report[name] = {"works": ok, "reason": reason}
    try:
        auto: str | None = resolve_backend("auto")
    except SandboxUnavailableError:
        auto = None
    if as_json:
        print(json.dumps({"backends": report, "auto": auto}, indent=2))
    else:
        table = Table(title="sandbox backends")
        table.add_column("backend")
        table.add_column("works")
        table.add_column("details")
        for name, row in report.items():
            table.add_row(name, "[green]yes[/green]" if row["works"] else "[red]no[/red]", str(row["reason"]))
        console = Console()
        console.print(table)
        console.print(f"--backend auto picks: {auto or 'nothing (no backend works)'}")
    if auto is None:
        raise typer.Exit(1)


@app.command()
def reap(
    run: Annotated[str | None, typer.Option("--run", help="Only containers of this run id")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON")] = False,
) -> None:
    """Remove what crashed runs left behind: docker containers labelled qaflow.run, and the bwrap
    temp folders and cgroups of dead processes.

    Example: qaflow sandbox reap --run 3f2a9c1d0b7e
    """
    removed: dict[str, int | None] = {}
    for name in ("docker", "bwrap"):
        ok, _reason = check_backend(name)
        removed[name] = backend_class(name).reap(run) if ok else None
    if as_json:
        print(json.dumps({"removed": removed}))
        return
    console = Console()
    for name, count in removed.items():
        console.print(f"{name}: " + ("unavailable, skipped" if count is None else f"removed {count}"))
