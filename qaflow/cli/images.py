"""CLI: `qaflow images build-base` builds the offline base image."""

from __future__ import annotations

from typing import Annotated

import typer

from qaflow.cli.output import console as cli_console
from qaflow.errors import SandboxError

app = typer.Typer(no_args_is_help=True, help="Offline base images for the docker backend.")


@app.command("build-base")
def build_base(force: Annotated[bool, typer.Option("--force", help="Rebuild even when cached")] = False) -> None:
    """Build the offline base image (debootstrap minbase + python3 + pytest, docker import), cached.

    Example: qaflow images build-base
    """
    from qaflow.sandbox.docker.images import build_base as build

    console = cli_console()
    try:
        tag = build(force=force, progress=lambda msg: console.print(f"[dim]{msg}[/dim]"))
    except SandboxError as e:
        console.print(f"[red]error:[/red] {e}")
        raise typer.Exit(1) from e
    console.print(f"base image ready: [bold]{tag}[/bold]")
