"""CLI: `qaflow export sft|rl|tasks`: Hugging Face datasets (Arrow + parquet + dataset card), optionally pushed.

Exit status: 0 written (rows may have been removed, with reasons), 1 nothing left to export or the
push failed, 2 bad input (a missing or unreadable path, an unknown status, an existing output, no token).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import polars as pl
import typer
from rich.markup import escape

from curation.export_limits import DEFAULT_MAX_MESSAGE_CHARS, DEFAULT_MAX_TASK_FILE_BYTES
from qaflow.cli.options import PrivateOpt, PushOpt
from qaflow.cli.output import console, emit_json, usage_error
from qaflow.models.frame import RolloutsError, read_rollouts
from qaflow.pool import DEFAULT_LEDGER
from qaflow.task import find_task_dirs

if TYPE_CHECKING:
    from curation.export import ExportReport, Removed

# `curation.export` (datasets, pyarrow) is imported by the commands, not here: `qaflow --help` stays fast.

T = TypeVar("T")

app = typer.Typer(
    no_args_is_help=True,
    help="Export rollouts (SFT, RL) and task pools as Hugging Face datasets with a dataset card.",
)

SHOWN_REMOVED = 20
"""Removed rows listed one by one in the summary; the rest are counted (all are in export_report.json)."""

OUT_HELP = "Output folder: save_to_disk files, parquet/ shards, README.md (the dataset card), export_report.json."
FORCE_HELP = "Replace OUT if it already holds files."
LICENSE_HELP = "License id for the card's metadata, e.g. apache-2.0."
STATUS_HELP = "Comma-separated statuses of the tasks' current versions (accepted, needs_repair, ...), or 'all'."


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="export")


@app.command("sft")
def sft(
    rollouts: Path = typer.Argument(..., metavar="ROLLOUTS", help="A rollout parquet file or a folder of shards."),
    out: Path = typer.Option(..., "--out", "-o", help=OUT_HELP),
    funnel: Path | None = typer.Option(None, "--funnel", help="Funnel JSON of the filter stage, shown in the card."),
    sharegpt: bool = typer.Option(True, "--sharegpt/--no-sharegpt", help="Also write the ShareGPT variant."),
    max_message_chars: int = typer.Option(
        DEFAULT_MAX_MESSAGE_CHARS, "--max-message-chars", min=1, help="Rows with a larger message are removed."
    ),
    push: PushOpt = None,
    private: PrivateOpt = False,
    license: str | None = typer.Option(None, "--license", help=LICENSE_HELP),
    force: bool = typer.Option(False, "--force", help=FORCE_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print the export report as JSON."),
) -> None:
    """Write the SFT dataset of ROLLOUTS: `messages` + `tools` + metadata, a ShareGPT variant and a card.

    Rows that cannot be exported (repaired text, broken tool-call structure, oversized messages) are
    left out and listed with their reason.

    Example: qaflow export sft runs/rollouts --out exports/sft --funnel runs/funnel.json
    """
    from curation.export import Provenance, export_sft, load_funnel

    token = _check_before(out, force, push)
    frame = _read_rollouts(rollouts)
    steps = None
    if funnel is not None:
        steps = _guard(lambda: load_funnel(funnel))
    provenance = Provenance.from_argv([rollouts, *([funnel] if funnel else [])])
    report = _export(
        lambda: export_sft(
            frame,
            out,
            funnel=steps,
            provenance=provenance,
            sharegpt=sharegpt,
            max_message_chars=max_message_chars,
            license=license,
            overwrite=force,
        )
    )
    _finish(report, push, token, private, as_json)


@app.command("rl")
def rl(
    source: Path = typer.Argument(
        ..., metavar="ROLLOUTS_OR_POOL", help="Rollouts (parquet file or folder), or a scanned pool folder."
    ),
    out: Path = typer.Option(..., "--out", "-o", help=OUT_HELP),
    rollouts: Path | None = typer.Option(
        None, "--rollouts", help="With a pool: rollouts giving the prompts the agent saw and per-effort stats."
    ),
    status: str = typer.Option("accepted", "--status", help="With a pool: " + STATUS_HELP),
    system_prompt: Path | None = typer.Option(
        None, "--system-prompt", help="With a pool: a text file used as the system message of built prompts."
    ),
    push: PushOpt = None,
    private: PrivateOpt = False,
    license: str | None = typer.Option(None, "--license", help=LICENSE_HELP),
    force: bool = typer.Option(False, "--force", help=FORCE_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print the export report as JSON."),
) -> None:
    """Write the RL dataset: one row per task version with its prompt, tools, grouping keys and per-effort stats.

    Example: qaflow export rl runs/rollouts --out exports/rl
    Example: qaflow export rl ./pool --rollouts runs/rollouts --status accepted --out exports/rl
    """
    from curation.export import Provenance, export_rl

    token = _check_before(out, force, push)
    statuses = _statuses(status)
    inputs: list[Path] = [source]
    if _is_rollouts(source):
        if rollouts is not None:
            usage_error("--rollouts goes with a pool; ROLLOUTS_OR_POOL is already rollouts")
        frame = _read_rollouts(source)
        report = _export(
            lambda: export_rl(frame, out, provenance=Provenance.from_argv(inputs), license=license, overwrite=force)
        )
    else:
        extra = _read_rollouts(rollouts) if rollouts is not None else None
        inputs += [rollouts] if rollouts is not None else []
        prompt = _read_text(system_prompt) if system_prompt is not None else None
        report = _export(
            lambda: export_rl(
                source,
                out,
                rollouts=extra,
                status=statuses,
                system_prompt=prompt,
                provenance=Provenance.from_argv(inputs),
                license=license,
                overwrite=force,
            )
        )
    _finish(report, push, token, private, as_json)


@app.command("tasks")
def tasks(
    pool: Path = typer.Argument(..., metavar="POOL", help="A pool folder (scanned: it has a ledger)."),
    out: Path = typer.Option(..., "--out", "-o", help=OUT_HELP),
    status: str = typer.Option("accepted", "--status", help=STATUS_HELP),
    max_file_bytes: int = typer.Option(
        DEFAULT_MAX_TASK_FILE_BYTES, "--max-file-bytes", min=1, help="Larger files are left out of a row (listed)."
    ),
    push: PushOpt = None,
    private: PrivateOpt = False,
    license: str | None = typer.Option(None, "--license", help=LICENSE_HELP),
    force: bool = typer.Option(False, "--force", help=FORCE_HELP),
    as_json: bool = typer.Option(False, "--json", help="Print the export report as JSON."),
) -> None:
    """Write a pool's tasks as rows with every file, so each task can be rebuilt (`rows_to_task_dir`).

    Example: qaflow export tasks ./tasks_repo --status accepted,needs_repair --out exports/tasks
    """
    from curation.export import Provenance, export_tasks

    token = _check_before(out, force, push)
    statuses = _statuses(status)
    if not pool.is_dir():
        usage_error(f"{pool}: no such pool folder")
    report = _export(
        lambda: export_tasks(
            pool,
            out,
            status=statuses,
            max_file_bytes=max_file_bytes,
            provenance=Provenance.from_argv([pool]),
            license=license,
            overwrite=force,
        )
    )
    _finish(report, push, token, private, as_json)


def _check_before(out: Path, force: bool, push: str | None) -> str | None:
    """What can fail before any work: the output folder, and the token when pushing."""
    from curation.export_common import prepare_out_dir, require_hub_token

    _guard(lambda: prepare_out_dir(out, overwrite=force))
    return _guard(lambda: require_hub_token(push)) if push else None


def _guard(action: Callable[[], T]) -> T:
    from curation.export import ExportError

    try:
        return action()
    except ExportError as e:
        usage_error(str(e))


def _statuses(status: str) -> list[str] | None:
    if status.strip() == "all":
        return None
    from curation.export_common import parse_statuses

    names = [s.strip() for s in status.split(",") if s.strip()]
    _guard(lambda: parse_statuses(names))
    return names


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        usage_error(f"{path}: cannot read: {e}")


def _read_rollouts(path: Path) -> pl.DataFrame:
    if not path.exists():
        usage_error(f"{path}: no such rollout file or folder")
    try:
        return read_rollouts(path)
    except RolloutsError as e:
        usage_error(str(e))
    except (OSError, pl.exceptions.PolarsError) as e:
        usage_error(f"{path}: cannot read rollouts: {e}")


def _is_rollouts(path: Path) -> bool:
    """True for rollouts, False for a pool; a usage error for anything else."""
    if not path.exists():
        usage_error(f"{path}: no such file or folder")
    if path.is_file():
        return True
    if (path / DEFAULT_LEDGER).is_file():
        return False
    if any(not p.name.startswith(".") for p in path.rglob("*.parquet")):
        return True
    if find_task_dirs(path):
        usage_error(f"{path}: a folder of tasks without a pool ledger; run `qaflow pool scan {path}` first")
    usage_error(f"{path}: neither rollouts (parquet) nor a pool folder")


def _export(action: Callable[[], ExportReport]) -> ExportReport:
    from curation.export import ExportError, NothingToExport

    try:
        return action()
    except NothingToExport as e:
        out = console(stderr=True)
        out.print(f"[red]error:[/red] {escape(str(e))}")
        _print_removed(e.removed, stderr=True)
        raise typer.Exit(1) from e
    except ExportError as e:
        usage_error(str(e))


def _print_removed(removed: list[Removed], *, stderr: bool = False) -> None:
    out = console(stderr=stderr)
    for r in removed[:SHOWN_REMOVED]:
        out.print(f"  removed {r.reason.value}: {escape(r.task)} {r.id[:12]}: {escape(r.detail)}")
    if len(removed) > SHOWN_REMOVED:
        out.print(f"  ... and {len(removed) - SHOWN_REMOVED} more (see export_report.json)")


def _finish(report: ExportReport, push: str | None, token: str | None, private: bool, as_json: bool) -> None:
    from curation.export import push_export

    url = None
    if push:
        try:
            url = push_export(report.out_dir, push, private=private, token=token)
        except OSError as e:
            console(stderr=True).print(f"[red]error:[/red] push to {escape(push)} failed: {escape(str(e))}")
            raise typer.Exit(1) from e
    if as_json:
        emit_json(report)
        return
    out = console()
    out.print(escape(report.summary()))
    _print_removed(report.removed)
    for note in report.notes:
        out.print(f"note: {escape(note)}")
    for name, pattern in report.configs.items():
        out.print(f"  config {name}: {escape(str(report.out_dir / pattern))}")
    if url:
        out.print(f"pushed to {url}")
