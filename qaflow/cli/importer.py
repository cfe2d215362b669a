"""CLI: `qaflow import tb SRC DST`, `qaflow import harbor-jobs SRC --out DIR` (and `qaflow import attempts`,
registered from `qaflow.cli.harden`).

A task or trial that fails to import is reported (exit 0); usage errors exit 2.
"""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape
from rich.table import Table

from qaflow.cli.options import JsonOpt
from qaflow.cli.output import console, emit_json, short, usage_error
from qaflow.importers.harbor_jobs import HarborImportError, import_job
from qaflow.importers.tb import ImportReport, ImportStatus, TbImportError, import_tb
from qaflow.models.frame import write_shard
from qaflow.models.rollout import Effort

app = typer.Typer(no_args_is_help=True)


@app.callback()
def _group() -> None:
    """Import tasks from other formats into the Harbor layout, and Harbor runs as rollouts."""


@app.command()
def tb(
    src: Path = typer.Argument(..., help="A Terminal-Bench task folder, or a folder of them (any depth)."),
    dst: Path = typer.Argument(..., help="Folder to write the Harbor tasks into, one DST/<id> per task."),
    force: bool = typer.Option(False, "--force", help="Replace DST/<id> when it exists with different content."),
    as_json: JsonOpt = None,
) -> None:
    """Convert Terminal-Bench tasks (task.yaml, solution.sh, run-tests.sh, tests/) to Harbor tasks.

    Each result is validated by loading it. A task that cannot be converted is reported with the
    file and reason, and the others are still converted.

    Example: qaflow import tb ./terminal-bench/tasks ./pool/tb --json
    """
    try:
        report = import_tb(src, dst, force=force)
    except TbImportError as e:
        usage_error(str(e))
    if as_json:
        emit_json(report, as_json)
        return
    _print_report(report)


def _print_report(report: ImportReport) -> None:
    out = console()
    table = Table("id", "status", "version", "dest")
    for e in report.entries:
        table.add_row(
            escape(e.source.name),
            e.status.value,
            short(e.version),
            escape(str(e.dest or "-")),
            style="red" if e.status == ImportStatus.FAILED else None,
        )
    out.print(table)
    for e in report.entries:
        if e.error:
            out.print(f"[red]failed[/red] {escape(e.source.name)}: {escape(e.error)}")
        for warning in e.warnings:
            out.print(f"[yellow]warning[/yellow] {escape(e.source.name)}: {escape(warning)}")
    out.print(report.summary())


@app.command("harbor-jobs")
def harbor_jobs(
    src: Path = typer.Argument(..., help="A Harbor job folder, a single trial folder, or a folder of job folders."),
    out: Path = typer.Option(..., "--out", help="Folder to write the rollout shard (parquet) into."),
    source: str | None = typer.Option(
        None, "--source", help="Source label of the records (default: harbor:<job folder name>)."
    ),
    effort: Effort | None = typer.Option(
        None, "--effort", help="Effort of every record (default: the trial's reasoning_effort, else off)."
    ),
    as_json: JsonOpt = None,
) -> None:
    """Import Harbor trials (result.json + agent/trajectory.json in ATIF) as rollout records.

    Each trial becomes one record (messages in OpenAI chat format, usage, reward, exit status) and
    all of them are written as one parquet shard in OUT, ready for filters and exporters. A trial
    that cannot be read (missing or malformed result.json) is reported with the file and reason,
    and the others are still imported.

    Example: qaflow import harbor-jobs ./jobs/2026-01-05__10-00-00 --out ./rollouts/harbor --json
    """
    try:
        report = import_job(src, source=source, effort=effort)
    except HarborImportError as e:
        usage_error(str(e))
    shard = write_shard(report.records, out, prefix="harbor")
    summary = {
        "source": str(report.source),
        "trials": report.trials,
        "imported": report.imported,
        "errors": [{"path": str(e.path), "reason": e.reason} for e in report.errors],
        "shard": str(shard) if shard else None,
    }
    if as_json:
        emit_json(summary, as_json)
        return
    console_out = console()
    for err in report.errors:
        console_out.print(f"[red]failed[/red] {escape(str(err.path))}: {escape(err.reason)}")
    console_out.print(report.summary())
    console_out.print(f"shard: {escape(str(shard))}" if shard else "no records: no shard written")
