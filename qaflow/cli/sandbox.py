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
    """Remove containers left behind by crashed runs (those labelled qaflow.run).

    Example: qaflow sandbox reap --run 3f2a9c1d0b7e
    """
    ok, reason = check_backend("docker")
    if not ok:
        Console(stderr=True).print(f"[red]docker unavailable:[/red] {reason}")
        raise typer.Exit(1)
    removed = backend_class("docker").reap(run)
    if as_json:
        print(json.dumps({"removed": removed}))
    else:
        Console().print(f"removed {removed} container(s)")
