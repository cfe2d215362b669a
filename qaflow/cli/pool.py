"""CLI: `qaflow pool scan|list|show`. Invalid tasks are data (exit 0); only usage errors exit non-zero."""

from __future__ import annotations

import sys
from pathlib import Path

import typer
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
from rich.table import Table

from qaflow.cli.options import JsonOpt
from qaflow.cli.output import console, emit_json, short, usage_error, when
from qaflow.ledger import LedgerError
from qaflow.models.records import TaskRow, VersionStatus
from qaflow.pool import Pool, PoolConfig, PoolError, ScanOutcome, ScanReport, TaskHistory

app = typer.Typer(
    no_args_is_help=True,
    help="Scan a pool of task folders into its ledger, list its tasks, show one task's history.",
)

LEDGER_HELP = "Ledger file (default: <pool>/.qaflow/ledger.sqlite)."
POOL_ARG = typer.Argument(None, metavar="[POOL]", help="Pool folder (default: the current folder).")
POOL_OPTION = typer.Option(None, "--pool", help="The pool folder, as the positional POOL (older spelling).")


def _pool_dir(positional: Path | None, option: Path | None) -> Path:
    """The pool of `pool list|show`: the positional POOL, or `--pool`, or the current folder."""
    if positional is not None and option is not None and positional != option:
        usage_error(f"two pools given: {positional} and --pool {option}; give one")
    return positional or option or Path(".")


def _open(pool_dir: Path, ledger: Path | None, *, create: bool, require_solution: bool = True) -> Pool:
    config = PoolConfig(ledger_path=ledger.resolve() if ledger else None, require_solution=require_solution)
    try:
        return Pool.open(pool_dir, config=config, create=create)
    except (PoolError, LedgerError) as e:
        usage_error(str(e))


@app.command()
def scan(
    pool_dir: Path = typer.Argument(
        ..., metavar="DIR", help="Pool folder: task folders (holding task.toml) at any depth."
    ),
    ledger: Path | None = typer.Option(None, "--ledger", help=LEDGER_HELP),
    require_solution: bool = typer.Option(
        True, "--require-solution/--no-require-solution", help="Treat a task without solution/solve.sh as invalid."
    ),
    as_json: JsonOpt = None,
) -> None:
    """Load every task under DIR and record new or changed versions in the pool's ledger.

    Invalid tasks are recorded with their reason and do not fail the command.

    Example: qaflow pool scan ./tasks_repo --json
    """
    with _open(pool_dir, ledger, create=True, require_solution=require_solution) as pool:
        progress = Progress(
            TextColumn("scanning"),
            BarColumn(),
            MofNCompleteColumn(),
            console=console(stderr=True),
            transient=True,
            disable=bool(as_json) or not sys.stderr.isatty(),
        )
        with progress:
            bar = progress.add_task("scan", total=None)
            try:
                report = pool.scan(progress=lambda done, total: progress.update(bar, completed=done, total=total))
            except LedgerError as e:  # another run holds the pool
                usage_error(str(e))
    if as_json:
        emit_json(report, as_json)
        return
    _print_scan(report)


def _print_scan(report: ScanReport) -> None:
    out = console()
    changed = [e for e in report.entries if e.outcome != ScanOutcome.UNCHANGED]
    if changed:
        table = Table("path", "name", "outcome", "status", "version", "parent")
        for e in changed:
            table.add_row(
                escape(e.path),
                escape(e.name),
                e.outcome.value,
                e.status.value,
                short(e.version),
                short(e.parent_version),
            )
        out.print(table)
    problems = [(e.path, e.error or "") for e in report.entries if e.status == VersionStatus.INVALID]
    problems += [(p.path, p.reason) for p in report.problems]
    if problems:
        out.print("[red]invalid:[/red]")
        for path, error in problems:
            out.print(f"  {escape(path)}: {escape(error)}")
    for path in report.removed:
        out.print(f"removed: {escape(path)}")
    for line in report.duplicate_warnings():
        out.print(f"[yellow]warning:[/yellow] {escape(line)}", soft_wrap=True)
    out.print(report.summary())


@app.command("list")
def list_(
    pool_dir: Path | None = POOL_ARG,
    pool_option: Path | None = POOL_OPTION,
    ledger: Path | None = typer.Option(None, "--ledger", help=LEDGER_HELP),
    status: VersionStatus | None = typer.Option(None, "--status", help="Only tasks whose current version has it."),
    as_json: JsonOpt = None,
) -> None:
    """List the tasks in the pool (as of its last scan) with their current version and status.

    Example: qaflow pool list ./tasks_repo --status invalid --json
    """
    with _open(_pool_dir(pool_dir, pool_option), ledger, create=False) as pool:
        rows = pool.list(status)
    if as_json:
        emit_json(rows, as_json)
        return
    _print_tasks(rows)


def _print_tasks(rows: list[TaskRow]) -> None:
    out = console()
    table = Table("name", "path", "version", "status", "parent", "recorded")
    for r in rows:
        table.add_row(
            escape(r.name),
            escape(r.path),
            r.short,
            r.status.value,
            short(r.parent_version),
            when(r.created_at),
            style="red" if r.status == VersionStatus.INVALID else None,
        )
    out.print(table)
    invalid = [r for r in rows if r.error]
    if invalid:
        out.print("[red]invalid:[/red]")
        for r in invalid:
            out.print(f"  {escape(r.path)}: {escape(r.error or '')}")
    counts: dict[str, int] = {}
    for r in rows:
        counts[r.status.value] = counts.get(r.status.value, 0) + 1
    detail = ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
    out.print(f"{len(rows)} tasks" + (f": {detail}" if detail else ""))


@app.command()
def show(
    name: str = typer.Argument(..., help="Task name, pool path, or version id prefix."),
    pool_dir: Path | None = POOL_ARG,
    pool_option: Path | None = POOL_OPTION,
    ledger: Path | None = typer.Option(None, "--ledger", help=LEDGER_HELP),
    as_json: JsonOpt = None,
) -> None:
    """Show every version of one task with its lineage, status changes, results and findings.

    Example: qaflow pool show csv-sum ./tasks_repo
    """
    with _open(_pool_dir(pool_dir, pool_option), ledger, create=False) as pool:
        try:
            history = pool.show(name)
        except PoolError as e:
            usage_error(str(e))
    if as_json:
        emit_json(history, as_json)
        return
    _print_history(history)


def _print_history(h: TaskHistory) -> None:
    out = console()
    out.print(f"[bold]{escape(h.name)}[/bold]")
    present = {x.version: x.path for x in h.heads}
    versions = Table("version", "status", "parent", "name", "first path", "in pool at", "recorded")
    for v in h.versions:
        versions.add_row(
            v.short,
            v.status.value,
            short(v.parent_version),
            escape(v.name),
            escape(v.path),
            escape(present.get(v.version, "-")),
            when(v.created_at),
        )
    out.print(versions)
    for v in h.versions:
        if v.error:
            out.print(f"[red]{v.short} invalid:[/red] {escape(v.error)}")
    if h.status_log:
        log = Table("version", "from", "to", "reason", "run", "when", title="status changes")
        for c in h.status_log:
            old = c.old_status.value if c.old_status else "-"
            log.add_row(
                short(c.version), old, c.new_status.value, escape(c.reason), c.run_id or "-", when(c.created_at)
            )
        out.print(log)
    if h.results:
        results = Table("version", "probe", "attempt", "status", "reward", "backend", "seconds", "run", title="results")
        for r in h.results:
            reward = "-" if r.reward is None else f"{r.reward:g}"
            results.add_row(
                short(r.task_version),
                escape(r.probe),
                str(r.attempt),
                r.status.value,
                reward,
                r.backend,
                f"{r.duration_s:.1f}",
                r.run_id,
            )
        out.print(results)
    if h.rollouts:
        title = "rollouts (errors: an infrastructure or model error, no result; a rerun tries them again)"
        rollouts = Table("version", "model", "effort", "round", "graded", "passed", "errors", title=title)
        for t in h.rollouts:
            rollouts.add_row(short(t.task_version), escape(t.model), t.effort, str(t.round), str(t.graded),
                             str(t.passed), str(t.errors))  # fmt: skip
        out.print(rollouts)
    if h.findings:
        findings = Table("version", "code", "severity", "message", "run", title="findings")
        for f in h.findings:
            findings.add_row(short(f.task_version), f.code.value, f.severity.value, escape(f.message), f.run_id)
        out.print(findings)
