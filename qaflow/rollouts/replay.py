"""The replay policy: a scripted model that solves a task by replaying its reference solution through
the harness's tools, for demos and pipeline tests where no model is configured.

It is not a model and says so (`model = "openai/replay-oracle"` in its records, REPLAY_MODEL): each attempt looks
around (`ls`), reads the instruction-relevant workdir, runs `solution/solve.sh`'s text through the
bash tool, checks, and stops. Effort sets how much it "thinks" (reasoning text length grows with
effort, with seeded noise), and `skip_rate` makes a seeded share of attempts skip the solution
(failures), so pass rates, bands and effort reports have something to show.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from qaflow.executors import LocalExecutor
from qaflow.executors.driver import Driver
from qaflow.models.records import VersionStatus
from qaflow.models.rollout import REPLAY_MODEL, Effort, RolloutRecord, rollout_id
from qaflow.pool import Pool
from qaflow.rollouts.replay_policy import replay_config
from qaflow.task import Task


def replay_pool(
    pool: Pool,
    *,
    efforts: Sequence[Effort] = (Effort.LOW, Effort.MEDIUM, Effort.XHIGH),
    attempts: int = 2,
    backend: str = "auto",
    skip_rate: float = 0.25,
    statuses: Sequence[VersionStatus] = (VersionStatus.ACCEPTED,),
    jobs: int = 2,
) -> int:
    """Record replay rollouts of the pool's tasks (current versions with one of `statuses`) in its ledger and
    shards; items already recorded are skipped. Returns how many attempts ran."""
    from qaflow.rollouts.attempt import run_attempt
    from qaflow.rollouts.job import sync_shards

    pool.scan()
    items = []
    for row in pool.list():
        if row.status not in statuses:
            continue
        task = Task.load(pool.root / row.path, require_solution=False)
        for effort in efforts:
            for attempt in range(attempts):
                rid = rollout_id(task.version, REPLAY_MODEL, effort.value, attempt)
                if not pool.ledger.rollout_ids([rid]):
                    items.append((task, effort, attempt))

    run_id = f"replay-{uuid.uuid4().hex[:12]}"

    def one(task: Task, effort: Effort, attempt: int) -> RolloutRecord:
        config = replay_config(task, effort, attempt, skip_rate=skip_rate)
        return run_attempt(task, config, effort=effort, attempt=attempt, backend=backend, run_id=run_id)

    def on_done(_item: int, record: RolloutRecord | Exception) -> None:
        if isinstance(record, Exception):
            raise record
        pool.ledger.put_rollout(record)

    with LocalExecutor(jobs) as workers:
        driver: Driver[int] = Driver(workers, [run_id])
        for n, item in enumerate(items):
            driver.submit(n, one, *item)
        driver.run(on_done)
    sync_shards(pool, pool.root / ".qaflow" / "rollouts")
    return len(items)
