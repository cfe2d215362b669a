"""Rollout jobs: every (task, effort, attempt) of a pool, run by the harness, recorded once.

Work items are keyed by `rollout_id` (task version, model, effort, attempt, round): items already
in the ledger are skipped, so an interrupted job resumes where it stopped. Attempts run as
`attempt_item` work items on an executor (local threads, or Ray tasks on a cluster); their records
stream back and only the driver thread writes the ledger. Parquet shards mirror the ledger: at the end of
every job (and on resume) each recorded rollout missing from the shard folder is written to a new
shard, so a crash between the ledger write and the shard write loses nothing.

Before anything runs, `check_efforts` asks litellm whether the model's provider takes every effort's
settings (and the per-attempt seed, when the harness sends one): a provider that cannot honour an effort
fails the job once with an `LLMError`, instead of every attempt ending in `llm_error`. Checks that need a
stage's own knowledge stay with that stage: for a local checkpoint (`qaflow-local/...`) the SFT/RL stage
installs its effort table and checks the tokenizer's thinking markers (`sft.local_llm.with_local_efforts`,
`check_local_efforts`, as `rl round` does) before calling `run_rollouts`; the core does not import it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl
from pydantic import BaseModel, ConfigDict, Field

from qaflow import interrupts
from qaflow.agents.effort import check_efforts
from qaflow.agents.harness import HarnessConfig
from qaflow.errors import QaflowError, TaskError
from qaflow.executors import Executor, LocalExecutor, Resources, TaskRef, resolve_task
from qaflow.executors.driver import Driver
from qaflow.ledger.db import ts
from qaflow.llm import LLMConfig
from qaflow.llm.account import ModelTotals, UsageAccount
from qaflow.models.frame import write_shard
from qaflow.models.records import RunKind, VersionStatus
from qaflow.models.rollout import REPLAY_MODEL, Effort, RolloutRecord, rollout_id
from qaflow.pool import Pool
from qaflow.rollouts.attempt import run_attempt
from qaflow.rollouts.changes import add_task_edges, audited_edges
from qaflow.rollouts.replay_policy import replay_config
from qaflow.runs import open_run
from qaflow.sandbox import resolve_backend
from qaflow.sandbox.spec import RunNetwork, RuntimeNetwork, network_from_env, offline_from_env
from qaflow.task import Task

SHARD_ROWS = 1000


class RolloutJobConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model: LLMConfig
    efforts: list[Effort] = Field(default_factory=lambda: [Effort.LOW, Effort.MEDIUM, Effort.XHIGH])
    attempts: int = Field(1, ge=1, description="Attempts per (task, effort).")
    jobs: int = Field(2, ge=1, description="Attempts run at once.")
    backend: str = "auto"
    offline: bool = Field(default_factory=offline_from_env, description="Build without network ($QAFLOW_OFFLINE).")
    network: RuntimeNetwork = Field(
        default_factory=network_from_env, description="Runtime network: task (as declared) or none ($QAFLOW_NETWORK)."
    )
    round: int = Field(0, ge=0, description="Collection round; a new round re-runs every item.")
    harness: HarnessConfig = Field(default_factory=HarnessConfig)
    statuses: list[VersionStatus] | None = Field(
        None, description="Only tasks whose current version has one of these statuses; None = every valid task."
    )
    tasks: list[str] | None = Field(None, description="Only these task names (or pool paths).")
    out_dir: Path | None = Field(None, description="Parquet shard folder; default POOL/.qaflow/rollouts.")


@dataclass(frozen=True)
class RolloutItem:
    task: Task
    effort: Effort
    attempt: int
    rollout_id: str


@dataclass
class RolloutReport:
    run_id: str
    planned: int = 0
    skipped: int = 0
    retried: int = 0
    """Items recorded before as an infrastructure or model error, run again (their records replaced)."""
    records: list[RolloutRecord] = field(default_factory=list)
    invalid_tasks: list[tuple[str, str]] = field(default_factory=list)
    shards: list[Path] = field(default_factory=list)
    interrupted: bool = False
    usage: dict = field(default_factory=dict)
    """`UsageAccount.summary()` of the job's model calls."""
    failed: list[tuple[str, str]] = field(default_factory=list)
    """(rollout id, reason) of items that did not run (a worker lost twice, a task not loadable there);
    nothing is recorded for them, so the next run tries them again."""

    @property
    def ran(self) -> int:
        return len(self.records)


def plan_items(pool: Pool, config: RolloutJobConfig) -> tuple[list[RolloutItem], list[tuple[str, str]]]:
    """Every (task, effort, attempt) of the pool's current valid task versions, and the tasks that did not load."""
    items: list[RolloutItem] = []
    invalid: list[tuple[str, str]] = []
    wanted = set(config.tasks) if config.tasks else None
    for row in pool.list():
        if row.status is VersionStatus.INVALID:
            continue
        if config.statuses is not None and row.status not in config.statuses:
            continue
        if wanted is not None and row.name not in wanted and row.path not in wanted:
            continue
        try:
            task = Task.load(pool.root / row.path, require_solution=False)
        except TaskError as e:
            invalid.append((row.path, f"{e.path}: {e.reason}"))
            continue
        for effort in config.efforts:
            for attempt in range(config.attempts):
                rid = rollout_id(task.version, config.model.model, effort.value, attempt, config.round)
                items.append(RolloutItem(task, effort, attempt, rid))
    return items, invalid


def shard_dir(pool: Pool, config: RolloutJobConfig) -> Path:
    return config.out_dir if config.out_dir is not None else pool.root / ".qaflow" / "rollouts"


def sync_shards(pool: Pool, folder: Path) -> list[Path]:
    """Write every rollout recorded in the ledger but absent from the shards in `folder` (or there only as
    an earlier try of a retried attempt) to new shards; readers keep the newest row of an id."""
    present: dict[str, set[str]] = {}
    if folder.is_dir():
        for path in folder.rglob("*.parquet"):
            if not path.name.startswith("."):
                rows = pl.read_parquet(path, columns=["rollout_id", "created_at"]).iter_rows()
                for rid, created in rows:
                    present.setdefault(rid, set()).add(ts(created) if created is not None else "")
    missing = {rid for rid, stamp in pool.ledger.rollout_stamps().items() if stamp not in present.get(rid, ())}
    if not missing:
        return []
    records = pool.ledger.rollouts(ids=missing)
    written = []
    for i in range(0, len(records), SHARD_ROWS):
        shard = write_shard(records[i : i + SHARD_ROWS], folder)
        if shard is not None:
            written.append(shard)
    return written


class AttemptOutcome(BaseModel):
    """What `attempt_item` returns: the record and the usage of the attempt's model calls."""

    record: RolloutRecord
    usage: dict[str, ModelTotals] = Field(default_factory=dict)


def attempt_item(
    task: Task | TaskRef,
    llm_config: LLMConfig,
    effort: Effort,
    attempt: int,
    round: int,
    backend: str,
    harness: HarnessConfig,
    run_id: str,
    offline: bool = False,
    network: str = "task",
) -> AttemptOutcome:
    """Work item: one rollout attempt (see `run_attempt`), with its own usage account; `offline` and
    `network` are the job's `RunNetwork` as plain values."""
    account = UsageAccount()
    resolved = resolve_task(task, require_solution=False)
    if llm_config.model == REPLAY_MODEL and llm_config.script is None:
        llm_config = replay_config(resolved, effort, attempt)
    record = run_attempt(
        resolved,
        llm_config,
        effort=effort,
        attempt=attempt,
        round=round,
        backend=backend,
        harness=harness,
        run_id=run_id,
        account=account,
        network=RunNetwork(offline=offline, network=RuntimeNetwork(network)),
    )
    return AttemptOutcome(record=record, usage={m: account.totals(m) for m in account.summary()["models"]})


def _add_usage(totals: dict[str, ModelTotals], usage: dict[str, ModelTotals]) -> None:
    for model, more in usage.items():
        into = totals.setdefault(model, ModelTotals())
        for name in ModelTotals.model_fields:
            have, add = getattr(into, name), getattr(more, name)
            setattr(into, name, (have or add) if isinstance(have, bool) else have + add)


def usage_summary(totals: dict[str, ModelTotals]) -> dict[str, Any]:
    """`UsageAccount.summary()`'s shape for totals merged from many accounts."""
    total: dict[str, ModelTotals] = {}
    for t in totals.values():
        _add_usage(total, {"": t})
    return {
        "models": {m: t.model_dump() for m, t in sorted(totals.items())},
        "total": total.get("", ModelTotals()).model_dump(),
    }


def run_rollouts(
    pool: Pool,
    config: RolloutJobConfig,
    *,
    force: bool = False,
    on_record: Callable[[RolloutRecord], None] | None = None,
    on_plan: Callable[[int], None] | None = None,
    executor: Executor | None = None,
) -> RolloutReport:
    """Run every pending item of the pool, record each in the ledger as it finishes, then sync the shards.

    Items run on `executor` (default: a local pool of `config.jobs` threads). An item whose worker
    was lost on every try, or whose task cannot be loaded where it ran, is listed in `report.failed`
    and the job goes on. A stop request (`qaflow.interrupts`: SIGINT, SIGTERM) or Ctrl-C cancels the items
    in flight, reaps their sandboxes, still syncs the shards, and raises (`Interrupted` carries this
    report, `interrupted` set); the next run resumes.

    Raises:
        LLMError: the provider refuses an effort's settings or the sampling seed (before any attempt,
            no run recorded; see `check_efforts`).
    """
    check_efforts(config.model, config.efforts, config.harness.efforts, seed=config.harness.seed is not None)
    ledger = pool.ledger
    resolve_backend(config.backend)  # fails early when no backend works; `auto` is then chosen per task
    backend = config.backend
    with open_run(ledger, RunKind.ROLLOUT, config.model_dump(mode="json", exclude={"model": {"script"}})) as run:
        pool.scan()
        report = RolloutReport(run_id=run.run_id)
        items, report.invalid_tasks = plan_items(pool, config)
        report.planned = len(items)
        retried: set[str] = set()
        if not force:
            # an attempt that ended in an infrastructure or model error is no result: it runs again
            done = ledger.rollout_ids((i.rollout_id for i in items), settled=True)
            retried = ledger.rollout_ids(i.rollout_id for i in items) - done
            report.skipped = sum(1 for i in items if i.rollout_id in done)
            report.retried = len(retried)
            items = [i for i in items if i.rollout_id not in done]
        if on_plan is not None:
            on_plan(len(items))
        owned = executor is None
        workers: Executor = executor if executor is not None else LocalExecutor(config.jobs)
        # a cluster gets a second item per slot queued, so that a freed CPU never waits for the driver
        limit = workers.slots * (2 if workers.kind == "ray" else 1)
        usage: dict[str, ModelTotals] = {}
        edges: dict[str, list[str] | None] = {}
        driver: Driver[RolloutItem] = Driver(workers, [run.run_id])
        queue = list(reversed(items))

        def refill() -> None:
            while queue and driver.in_flight < limit:
                item = queue.pop()
                env = item.task.config.environment
                resources = Resources(
                    cpus=env.cpus or workers.resources.cpus, memory_mb=env.memory_mb or workers.resources.memory_mb
                )
                args = (item.effort, item.attempt, config.round, backend, config.harness, run.run_id)
                net = (config.offline, config.network.value)
                shared = workers.share_task(item.task)
                driver.submit(item, attempt_item, shared, config.model, *args, *net, resources=resources)

        def on_done(item: RolloutItem, outcome: AttemptOutcome | Exception) -> None:
            if isinstance(outcome, QaflowError):
                report.failed.append((item.rollout_id, f"{item.task.name}: {type(outcome).__name__}: {outcome}"))
                return
            if isinstance(outcome, BaseException):
                raise outcome
            _add_usage(usage, outcome.usage)
            if item.task.version not in edges:
                try:
                    edges[item.task.version] = audited_edges(ledger, item.task)
                except ValueError:  # an audit recorded in an older layout: no task edges
                    edges[item.task.version] = None
            add_task_edges(outcome.record, edges[item.task.version])
            ledger.put_rollout(outcome.record, force=force or item.rollout_id in retried)
            report.records.append(outcome.record)
            if on_record is not None:
                on_record(outcome.record)

        try:
            try:
                driver.run(on_done, refill)
            except BaseException as e:
                report.interrupted = True
                if isinstance(e, interrupts.Interrupted):
                    e.done = [report]
                raise
        finally:
            if owned:
                workers.close()
            report.usage = usage_summary(usage)
            report.shards = sync_shards(pool, shard_dir(pool, config))
    return report
