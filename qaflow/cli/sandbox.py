"""CLI: `qaflow sandbox doctor`, `qaflow sandbox reap` and `qaflow sandbox install-gvisor`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from qaflow.cli.options import JsonOpt
from qaflow.cli.output import console as cli_console
from qaflow.cli.output import emit_json
from qaflow.errors import SandboxUnavailableError
from qaflow.sandbox import backend_class, check_backend, check_runtime, resolve_backend
from qaflow.sandbox.docker.gvisor import DAEMON_JSON, GvisorError, install

app = typer.Typer(no_args_is_help=True, help="Inspect and clean up sandbox backends.")


@app.command()
def doctor(as_json: JsonOpt = None) -> None:
    """Say which backends work on this machine, and why not; and whether gVisor (--runtime runsc) works.

    Example: qaflow sandbox doctor
    """
    report: dict[str, dict[str, object]] = {}
    for name in ("docker", "bwrap"):
        ok, reason = check_backend(name)
        report[name] = {"works": ok, "reason": reason}
    if report["docker"]["works"]:
        ok, reason = check_runtime("runsc")
    else:
        ok, reason = False, "needs the docker backend"
    runtimes = {"runsc": {"works": ok, "reason": reason}}
    try:
        auto: str | None = resolve_backend("auto")
    except SandboxUnavailableError:
        auto = None
    if as_json:
        per_task = bool(report["docker"]["works"] and report["bwrap"]["works"])
        shown = {"backends": report, "runtimes": runtimes, "auto": auto, "auto_per_task": per_task}
        emit_json(shown, as_json)
    else:
        table = Table(title="sandbox backends")
        table.add_column("backend")
        table.add_column("works")
        table.add_column("details")
        rows = {**report, "docker:runsc (gVisor)": runtimes["runsc"]}
        for name, row in rows.items():
            table.add_row(name, "[green]yes[/green]" if row["works"] else "[red]no[/red]", str(row["reason"]))
        console = cli_console()
        console.print(table)
        both = report["docker"]["works"] and report["bwrap"]["works"]
        picks = "bwrap or docker, per task (README, Sandboxes)" if both else auto
        console.print(f"--backend auto picks: {picks or 'nothing (no backend works)'}")
    if auto is None:
        raise typer.Exit(1)


@app.command()
def reap(
    run: Annotated[str | None, typer.Option("--run", help="Only containers of this run id")] = None,
    as_json: JsonOpt = None,
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
        emit_json({"removed": removed}, as_json)
        return
    console = cli_console()
    for name, count in removed.items():
        console.print(f"{name}: " + ("unavailable, skipped" if count is None else f"removed {count}"))


@app.command("install-gvisor")
def install_gvisor(
    daemon_json: Annotated[Path, typer.Option("--daemon-json", help="dockerd's config file")] = DAEMON_JSON,
    reload: Annotated[bool, typer.Option("--reload/--no-reload", help="SIGHUP dockerd to load it")] = True,
    as_json: JsonOpt = None,
) -> None:
    """Register gVisor's runsc (apt-get install -y runsc) with dockerd, so that `--runtime runsc` works.

    Merges the runtime into daemon.json (other settings kept, a backup beside it), makes dockerd
    reload it (SIGHUP: running containers are not touched), and starts a test container under it.
    Exit code 1 when it does not work yet (the message says what to do), 2 when it cannot be set up.

    Example: qaflow sandbox install-gvisor
    """
    console = cli_console()
    try:
        report = install(daemon_json, reload=reload)
    except GvisorError as e:
        if as_json:
            emit_json({"works": False, "reason": str(e)}, as_json)
        else:
            console.print(f"[red]error:[/red] {e}")
        raise typer.Exit(2) from e
    if as_json:
        emit_json(report, as_json)
    else:
        state = "runsc added" if report.changed else "runsc already registered"
        console.print(f"{report.daemon_json}: {state}" + (f" (backup: {report.backup})" if report.backup else ""))
        colour = "green" if report.works else "red"
        console.print(f"runsc at {report.runsc}: [{colour}]{'works' if report.works else 'not working'}[/{colour}]")
        if report.reason:
            console.print(report.reason)
    if not report.works:
        raise typer.Exit(1)
