"""Runs that never ended: a killed `qaflow audit` or `qaflow repair` leaves its run open in the ledger
and its sandboxes behind; the next run of the same kind on the pool reaps and closes them."""

from __future__ import annotations

from qaflow.ledger import Ledger
from qaflow.models.records import RunKind
from qaflow.sandbox import reap_run


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
