"""CLI: `qaflow audit PATH...` runs every probe on task folders or pools and records the findings."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from qaflow.audit.report import build_report, print_summary, to_json, write_html
from qaflow.audit.runner import DEFAULT_REPEATS, AuditConfig
from qaflow.audit.service import audit_folders, check_backend_name
from qaflow.cli.options import (
    AddressOpt,
    BackendOpt,
    ExecutorOpt,
    JsonOpt,
    NetworkOpt,
    OfflineOpt,
    RuntimeOpt,
    backend_with_runtime,
)
from qaflow.cli.output import console as cli_console
from qaflow.cli.output import json_to_stdout, usage_error, write_json_text
from qaflow.cli.progress import RunProgress
from qaflow.cli.runs import reaped_notice
from qaflow.errors import SandboxUnavailableError
from qaflow.executors import ExecutorError, executor_from_options
from qaflow.interrupts import Interrupted, stop_on_signals
from qaflow.ledger.lock import PoolBusyError, run_lock
from qaflow.models.audit import AuditReport, TaskAudit
from qaflow.models.records import RunKind, VersionStatus
from qaflow.pool import Pool, ScanOutcome
from qaflow.sandbox.spec import RuntimeNetwork
from qaflow.task import find_task_dirs


def register(app: typer.Typer) -> None:
    app.command("audit")(audit)


@contextmanager
def _locked(pool: Pool, console: Console) -> Iterator[None]:
    """The pool's run lock, held before anything is written (the scan included); refused: exit 2."""
    try:
        with run_lock(pool.ledger.path, RunKind.AUDIT.value):
            yield
    except PoolBusyError as e:
        console.print(f"[red]error:[/red] {escape(str(e))}")
        raise typer.Exit(2) from e


def _pools(paths: list[Path]) -> dict[Path, list[Path]]:
    """Group task folders by the pool (ledger folder) they belong to: a pool folder is its own
    pool; a single task folder belongs to its parent folder's pool."""
    groups: dict[Path, list[Path]] = {}
    for path in paths:
        path = path.resolve()
        if path.exists() and not path.is_dir():
            usage_error(f"{path}: not a folder (audit takes task folders, or pools: folders of task folders)")
        if not path.is_dir():
            usage_error(f"{path}: no such folder")
        root = path.parent if (path / "task.toml").is_file() else path
        groups.setdefault(root, []).extend(find_task_dirs(path))
    return groups


def _write_reports(report: AuditReport, json_to: str | None, html_file: Path | None) -> None:
    if json_to:
        write_json_text(to_json(report), json_to)
    if html_file:
        write_html(html_file, report)


def audit(
    ctx: typer.Context,
    paths: Annotated[list[Path], typer.Argument(help="Task folders or pools (folders of task folders)")],
    backend: BackendOpt = "auto",
    runtime: RuntimeOpt = None,
    offline: OfflineOpt = False,
    network: NetworkOpt = RuntimeNetwork.TASK,
    repeats: Annotated[
        int,
        typer.Option(
            min=1,
            help="Outcomes each of nop and oracle that must agree (flaky verifiers): verifier reruns first, more "
            "trials only where the evidence is unclear",
        ),
    ] = DEFAULT_REPEATS,
    exhaustive: Annotated[
        bool,
        typer.Option("--exhaustive", help="Run --repeats full trials each of nop and oracle whatever the evidence"),
    ] = False,
    jobs: Annotated[int, typer.Option("--jobs", "-j", min=1, help="Trials run concurrently")] = 2,
    max_mutants: Annotated[int, typer.Option(min=0, help="Wrong solutions derived from the oracle, per task")] = 12,
    json_to: JsonOpt = None,
    html_file: Annotated[Path | None, typer.Option("--html", help="Write a self-contained HTML report here")] = None,
    only_new: Annotated[bool, typer.Option("--only-new", help="Skip task versions audited before")] = False,
    force: Annotated[bool, typer.Option("--force", help="Redo probes already recorded in the ledger")] = False,
    executor: ExecutorOpt = "local",
    address: AddressOpt = None,
) -> None:
    """Audit tasks by running them: lint, build, nop, oracle, repeats, mutants, tamper.

    Findings are results, not failures: the exit code is 0 unless the command was misused or no
    sandbox backend works. Work is recorded in each pool's ledger (POOL/.qaflow/ledger.sqlite),
    so a rerun skips finished probes.

    With --executor ray every build and trial is a Ray task (the task's CPUs and memory) on the
    cluster at --address, using each worker's own Docker daemon; results come back to this process,
    which alone writes the ledger.

    Example: qaflow audit tasks_repo --json audit.json --html audit.html
    Example: qaflow audit tasks_repo --offline --network none

    Long on purpose: a command's option list and its one flow (pools, executor, audit, reports).
    """
    console = cli_console(stderr=True)
    sandbox = backend_with_runtime(backend, runtime)
    config = AuditConfig(
        backend=sandbox,
        repeats=repeats,
        exhaustive=exhaustive,
        jobs=jobs,
        max_mutants=max_mutants,
        force=force,
        offline=offline,
        network=network,
    )
    groups = _pools(paths)
    options = config.model_dump(mode="json") | {"executor": executor, "only_new": only_new}
    if not any(groups.values()):  # an empty pool is a pool, as `qaflow pool scan` has it
        empty = build_report([], backend=sandbox, options=options)
        cli_console(stderr=json_to_stdout(json_to)).print(
            f"{', '.join(str(p) for p in paths)}: no task folders (task.toml) found, nothing to audit"
        )
        _write_reports(empty, json_to, html_file)
        return
    try:
        workers = executor_from_options(executor, address, jobs)
    except ExecutorError as e:
        console.print(f"[red]error:[/red] {e}")
        raise typer.Exit(2) from e
    ctx.call_on_close(workers.close)
    audits: list[TaskAudit] = []
    started = time.perf_counter()
    run_ids: list[str] = []
    chosen = sandbox
    stopped: Interrupted | None = None
    try:
        check_backend_name(backend)
    except SandboxUnavailableError as e:
        console.print(f"[red]error:[/red] {escape(str(e))}")
        raise typer.Exit(2) from e
    with stop_on_signals():
        for root, folders in groups.items():
            with Pool.open(root) as pool, _locked(pool, console):
                scan = pool.scan()
                for line in scan.duplicate_warnings():
                    console.print(f"[yellow]warning:[/yellow] {escape(line)}", soft_wrap=True)
                if only_new:
                    fresh = {
                        e.path
                        for e in scan.entries
                        if e.status is VersionStatus.NEW or e.outcome in (ScanOutcome.ADDED, ScanOutcome.CHANGED)
                    }
                    folders = [f for f in folders if pool.rel(f) in fresh]
                try:
                    with RunProgress(console, "audit", len(folders)) as progress:
                        batch = audit_folders(pool, folders, config, executor=workers, progress=progress.done,
                                              on_reaped=reaped_notice(console), scan=False)  # fmt: skip
                except (SandboxUnavailableError, PoolBusyError) as e:
                    console.print(f"[red]error:[/red] {escape(str(e))}")
                    raise typer.Exit(2) from e
                except Interrupted as e:
                    stopped = e
                    audits += e.done
                    run_ids += [e.run_id] if e.run_id else []
                    break
            chosen = batch.backend
            audits += batch.audits
            if batch.run_id is not None:
                run_ids.append(batch.run_id)
    report = build_report(audits, backend=chosen, run_ids=run_ids, options=options,
                          seconds=time.perf_counter() - started)  # fmt: skip
    print_summary(console if json_to_stdout(json_to) else cli_console(), report)
    _write_reports(report, json_to, html_file)
    if stopped is not None:
        console.print(
            f"[yellow]interrupted:[/yellow] {len(stopped.done)} task(s) audited, {stopped.recorded} results "
            "recorded; rerun to resume"
        )
        raise typer.Exit(stopped.exit_status)
    if not audits:
        console.print("no task folders found")
