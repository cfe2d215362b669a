"""Closing crashed runs from a CLI command, with a line for people per run closed."""

from __future__ import annotations

from rich.console import Console

from qaflow.ledger import Ledger
from qaflow.models.records import RunKind
from qaflow.runs import close_crashed_runs as close_runs


def close_crashed_runs(ledger: Ledger, kind: RunKind, console: Console) -> None:
    """Reap and close the unfinished runs of `kind` (see `qaflow.runs`), saying so on `console`."""
    for run_id, removed in close_runs(ledger, kind).items():
        console.print(f"[yellow]run {run_id} had crashed; removed {removed} leftover sandbox(es)[/yellow]")
