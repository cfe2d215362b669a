"""CLI: `qaflow audit PATH...` runs every probe on task folders or pools and records the findings."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import IO, Annotated

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

from qaflow.audit.report import print_summary, to_json, write_html
from qaflow.audit.runner import DEFAULT_REPEATS, AuditConfig
from qaflow.audit.service import audit_folders
from qaflow.cli.options import (
    AddressOpt,
    BackendOpt,
    ExecutorOpt,
    NetworkOpt,
    OfflineOpt,
    RuntimeOpt,
    backend_with_runtime,
)
from qaflow.cli.output import console as cli_console
from qaflow.cli.output import usage_error
from qaflow.cli.runs import reaped_notice
from qaflow.errors import SandboxUnavailableError
from qaflow.executors import ExecutorError, executor_from_options
from qaflow.ledger.lock import PoolBusyError
from qaflow.models.audit import TaskAudit
from qaflow.models.records import VersionStatus
from qaflow.pool import Pool, ScanOutcome
from qaflow.sandbox.spec import RuntimeNetwork
from qaflow.task import find_task_dirs


class LineProgress:
    """Progress a log can read (stdout piped to a file or CI): one line per finished task, flushed at once."""

    def __init__(self, total: int, file: IO[str] | None = None):
        self.total, self.count, self.file = total, 0, file

    def done(self, message: str) -> None:
        self.count += 1
        print(f"audit {self.count}/{self.total} {message}", file=self.file or sys.stdout, flush=True)


def register(app: typer.Typer) -> None:
    app.command("audit")(audit)


def _pools(paths: list[Path]) -> dict[Path, list[Path]]:
    """Group task folders by the pool (ledger folder) they belong to: a pool folder is its own
    pool; a single task folder belongs to its parent folder's pool."""
    groups: dict[Path, list[Path]] = {}
    for path in paths:
        path = path.resolve()
        if not path.is_dir():
            raise typer.BadParameter(f"{path}: no such folder")
        root = path.parent if (path / "task.toml").is_file() else path
        groups.setdefault(root, []).extend(find_task_dirs(path))
    return groups


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
    json_file: Annotated[Path | None, typer.Option("--json", help="Write the per-task JSON report here")] = None,
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
    backend = backend_with_runtime(backend, runtime)
    config = AuditConfig(
        backend=backend,
        repeats=repeats,
        exhaustive=exhaustive,
        jobs=jobs,
        max_mutants=max_mutants,
        force=force,
        offline=offline,
        network=network,
    )
    groups = _pools(paths)
    if not any(groups.values()):
        usage_error(f"{', '.join(str(p) for p in paths)}: no task folders (task.toml) found")
    try:
        workers = executor_from_options(executor, address, jobs)
    except ExecutorError as e:
        console.print(f"[red]error:[/red] {e}")
        raise typer.Exit(2) from e
    ctx.call_on_close(workers.close)
    audits: list[TaskAudit] = []
    started = time.perf_counter()
    run_ids: list[str] = []
    chosen = backend
    for root, folders in groups.items():
        with Pool.open(root) as pool:
            scan = pool.scan()
            if only_new:
                fresh = {
                    e.path
                    for e in scan.entries
                    if e.status is VersionStatus.NEW or e.outcome in (ScanOutcome.ADDED, ScanOutcome.CHANGED)
                }
                folders = [f for f in folders if pool.rel(f) in fresh]
            auditor_progress = Progress(
                TextColumn("[bold]audit[/bold]"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                TextColumn("{task.description}"), console=console, transient=True,
            )  # fmt: skip
            with auditor_progress as progress:
                bar = progress.add_task("", total=len(folders))

                lines = LineProgress(len(folders), console.file) if not console.is_terminal else None

                def advance(
                    message: str, bar: TaskID = bar, progress: Progress = progress, lines: LineProgress | None = lines
                ) -> None:
                    progress.update(bar, advance=1, description=message)
                    if lines is not None:
                        lines.done(message)

                try:
                    batch = audit_folders(pool, folders, config, executor=workers, progress=advance,
                                          on_reaped=reaped_notice(console), scan=False)  # fmt: skip
                except (SandboxUnavailableError, PoolBusyError) as e:
                    console.print(f"[red]error:[/red] {escape(str(e))}")
                    raise typer.Exit(2) from e
            chosen = batch.backend
            audits += batch.audits
            if batch.run_id is not None:
                run_ids.append(batch.run_id)
    seconds = time.perf_counter() - started
    print_summary(cli_console(), audits, backend=chosen, seconds=seconds)
    if json_file:
        json_file.write_text(to_json(audits), encoding="utf-8")
    if html_file:
        write_html(html_file, audits, backend=chosen, run_id=",".join(run_ids))
    if not audits:
        console.print("no task folders found")
