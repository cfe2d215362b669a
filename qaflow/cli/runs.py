"""Crashed runs closed from a CLI command, with a line for people per run closed."""

from __future__ import annotations

from rich.console import Console

from qaflow.ledger import Ledger
from qaflow.models.records import RunKind
from qaflow.runs import Reaped
from qaflow.runs import close_crashed_runs as close_runs


def reaped_notice(console: Console) -> Reaped:
    """A `qaflow.runs.Reaped` callback that tells `console` about each crashed run it closed."""

    def notice(run_id: str, removed: int) -> None:
        console.print(f"[yellow]run {run_id} had crashed; removed {removed} leftover sandbox(es)[/yellow]")

    return notice


def close_crashed_runs(ledger: Ledger, kind: RunKind, console: Console) -> None:
    """Reap and close the unfinished runs of `kind` (see `qaflow.runs`), saying so on `console`."""
    notice = reaped_notice(console)
    for run_id, removed in close_runs(ledger, kind).items():
        notice(run_id, removed)
