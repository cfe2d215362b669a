"""Runs in the ledger, opened the one way every step opens them (docs/contracts.md, "Runs").

`open_run` is `with ledger.run(kind, config) as run:` after reaping crashed runs of the same kind: a
killed `qaflow audit` or `qaflow repair` leaves its run open in the ledger and its sandboxes behind,
and the next run of that kind on the pool reaps and closes them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from pydantic import BaseModel

from qaflow.errors import SandboxError
from qaflow.ledger import Ledger
from qaflow.ledger.lock import run_lock
from qaflow.models.records import Run, RunKind
from qaflow.sandbox import reap_run

log = logging.getLogger(__name__)

Reaped = Callable[[str, int], None]
"""Told of each crashed run closed: its id and how many leftover sandboxes were removed."""


def close_crashed_runs(ledger: Ledger, kind: RunKind) -> dict[str, int]:
    """Reap the sandboxes of every unfinished run of `kind` and close it; returns removals per run id.

    Called with the pool's run lock held (`open_run`): no other process has a run open, so an unfinished
    run is a crashed one.
    """
    closed: dict[str, int] = {}
    for run in ledger.runs(kind):
        if run.ended_at is None:
            try:
                closed[run.run_id] = reap_run(run.run_id)
            except SandboxError as exc:  # its leftovers do not touch this run: the next one tries again
                log.warning("run %s stays open: %s", run.run_id, exc)
                continue
            ledger.end_run(run.run_id)
    return closed


@contextmanager
def open_run(
    ledger: Ledger, kind: RunKind, config: BaseModel | dict[str, Any] | None = None, *, on_reaped: Reaped | None = None
) -> Iterator[Run]:
    """Take the pool's run lock, reap crashed runs of `kind` (with the lock held, an open run is a crashed
    one), then record a run of `kind` that ends when the block does.

    Raises:
        PoolBusyError: another process has a run open on this pool; nothing is reaped or recorded.
    """
    with run_lock(ledger.path, kind.value):
        for run_id, removed in close_crashed_runs(ledger, kind).items():
            if on_reaped is not None:
                on_reaped(run_id, removed)
        with ledger.run(kind, config) as run:
            yield run
