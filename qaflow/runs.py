"""Runs in the ledger, opened the one way every step opens them (docs/contracts.md, "Runs").

`open_run` is `with ledger.run(kind, config) as run:` after reaping crashed runs of the same kind: a
killed `qaflow audit` or `qaflow repair` leaves its run open in the ledger and its sandboxes behind,
and the next run of that kind on the pool reaps and closes them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from pydantic import BaseModel

from qaflow.ledger import Ledger
from qaflow.models.records import Run, RunKind
from qaflow.sandbox import reap_run

Reaped = Callable[[str, int], None]
"""Told of each crashed run closed: its id and how many leftover sandboxes were removed."""


def close_crashed_runs(ledger: Ledger, kind: RunKind) -> dict[str, int]:
    """Reap the sandboxes of every unfinished run of `kind` and close it; returns removals per run id.

    One run of a kind per pool at a time is assumed: an unfinished run is a crashed one.
    """
    closed: dict[str, int] = {}
    for run in ledger.runs(kind):
        if run.ended_at is None:
            closed[run.run_id] = reap_run(run.run_id)
            ledger.end_run(run.run_id)
    return closed


@contextmanager
def open_run(
    ledger: Ledger, kind: RunKind, config: BaseModel | dict[str, Any] | None = None, *, on_reaped: Reaped | None = None
) -> Iterator[Run]:
    """Reap crashed runs of `kind`, then record a run of `kind` that ends when the block does."""
    for run_id, removed in close_crashed_runs(ledger, kind).items():
        if on_reaped is not None:
            on_reaped(run_id, removed)
    with ledger.run(kind, config) as run:
        yield run
