"""CLI: `qaflow export sft|rl|tasks`: Hugging Face datasets (Arrow + parquet + dataset card), optionally pushed.

Exit status: 0 written (rows may have been removed, with reasons), 1 nothing left to export or the
push failed, 2 bad input (a missing or unreadable path, an unknown status, an existing output, no token).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TypeVar

import polars as pl
import typer
from rich.markup import escape

from curation.export.limits import DEFAULT_MAX_MESSAGE_CHARS, DEFAULT_MAX_TASK_FILE_BYTES
from curation.export.transforms import TransformName, chosen_transforms
from qaflow.cli.options import JsonOpt, PrivateOpt, PushOpt
from qaflow.cli.output import console, emit_json, usage_error
from qaflow.harden.gate import ALLOW_HOLES_FLAG
from qaflow.models.frame import RolloutsError, read_rollouts
from qaflow.pool import DEFAULT_LEDGER
from qaflow.task import find_task_dirs

if TYPE_CHECKING:
    from curation.export import ExportReport, FunnelStep, Removed
    from curation.export.common import SplitSpec

# `curation.export` (datasets, pyarrow) is imported by the commands, not here: `qaflow --help` stays fast.

T = TypeVar("T")

app = typer.Typer(
    no_args_is_help=True,
    help="Export rollouts (SFT, RL) and task pools as Hugging Face datasets with a dataset card.",
)

SHOWN_REMOVED = 20
"""Removed rows listed one by one in the summary; the rest are counted (all are in export_report.json)."""

OUT_HELP = (
    "Output folder, a dataset repository as pushed: data/<split>-*.parquet, README.md (the dataset card), "
    "export_report.json; load it with datasets.load_dataset(OUT)."
)
POOL_HELP = "The pool the rollouts ran on: its ledger says which task versions are accepted (and their audit)."
TEST_FRACTION_HELP = "Share of tasks held out as a test split (by task: no task is in both splits)."
TEST_TASKS_HELP = (
    "The test split's tasks: a parquet or JSONL of tasks (e.g. `qaflow curate mix --eval-out`, column `name`) or "
    "a text file with one task name per line."
)
FORCE_HELP = "Replace OUT if it already holds files."
LICENSE_HELP = "License id for the card's metadata, e.g. apache-2.0."
TRANSFORM_NAMES = ", ".join(t.value for t in TransformName)
STATUS_HELP = "Comma-separated statuses of the tasks' current versions (accepted, needs_repair, ...), or 'all'."


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="export")


IncludeUnacceptedOpt = Annotated[
    bool,
    typer.Option(
        "--include-unaccepted", help="Also export rows of task versions that are not accepted (or not in the pool)."
    ),
]
AllowHarnessHolesOpt = Annotated[
    bool,
    typer.Option(
        ALLOW_HOLES_FLAG, help="Also export rows of accepted task versions that a proven harness hole reaches."
    ),
]
IncludeUngradedOpt = Annotated[
    bool,
    typer.Option("--include-ungraded", help="Also export attempts that ended in an error or without a reward."),
]
IncludeScriptedOpt = Annotated[
    bool, typer.Option("--include-scripted", help="Also export rollouts of scripted policies (replays, tests).")
]
IncludeHacksOpt = Annotated[
    bool,
    typer.Option(
        "--include-hacks",
        help="Also export rewarded attempts that changed a trust edge of their verifier (the reward_hack rule).",
    ),
]
IncludeFailedOpt = Annotated[
    bool,
    typer.Option(
        "--include-failed",
        "--include-failures",
        help="Also export graded attempts the verifier did not pass (the method trains only on passing sessions); "
        "the card says how many.",
    ),
]
TestFractionOpt = Annotated[float, typer.Option("--test-fraction", min=0.0, max=0.99, help=TEST_FRACTION_HELP)]
TestTasksOpt = Annotated[Path | None, typer.Option("--test-tasks", help=TEST_TASKS_HELP)]
SplitSeedOpt = Annotated[int, typer.Option("--split-seed", help="Seed of the --test-fraction choice.")]


@app.command("sft")
def sft(
    rollouts: Path = typer.Argument(
        ..., metavar="ROLLOUTS", help="A rollout parquet file, a folder of shards, or a pool (its recorded rollouts)."
    ),
    out: Path = typer.Option(..., "--out", "-o", help=OUT_HELP),
    pool: Path | None = typer.Option(None, "--pool", help=POOL_HELP),
    include_unaccepted: IncludeUnacceptedOpt = False,
    allow_harness_holes: AllowHarnessHolesOpt = False,
    include_ungraded: IncludeUngradedOpt = False,
    include_scripted: IncludeScriptedOpt = False,
    include_hacks: IncludeHacksOpt = False,
    include_failed: IncludeFailedOpt = False,
    test_fraction: TestFractionOpt = 0.0,
    test_tasks: TestTasksOpt = None,
    split_seed: SplitSeedOpt = 0,
    funnel: Path | None = typer.Option(None, "--funnel", help="Funnel JSON of the filter stage, shown in the card."),
    apply_filter: bool = typer.Option(
        True,
        "--filter/--no-filter",
        help="Without --funnel, first apply `qaflow filter`'s built-in rules (>= 5 turns, no timeouts, no subagent "
        "calls, ...; the funnel goes in the card); --no-filter exports the rollouts as they are.",
    ),
    sharegpt: bool = typer.Option(True, "--sharegpt/--no-sharegpt", help="Also write the ShareGPT variant."),
    max_message_chars: int = typer.Option(
        DEFAULT_MAX_MESSAGE_CHARS, "--max-message-chars", min=1, help="Rows with a larger message are removed."
    ),
    push: PushOpt = None,
    private: PrivateOpt = False,
    license: str | None = typer.Option(None, "--license", help=LICENSE_HELP),
    force: bool = typer.Option(False, "--force", help=FORCE_HELP),
    as_json: JsonOpt = None,
    tokenizer: str | None = typer.Option(
        None, "--tokenizer", help="Model whose tokenizer counts each session: the card states the max_length TRL needs."
    ),
    transform: list[str] = typer.Option(
        [],
        "--transform",
        metavar="NAME[,NAME]",
        help=f"Rewrite each session into a template-safe shape ({TRANSFORM_NAMES}; repeatable).",
    ),
    for_template: str | None = typer.Option(
        None,
        "--for-template",
        metavar="TEMPLATE",
        help="A TRL-bundled chat template (e.g. gptoss, llama3_1, muse_glimmer): apply the transforms it needs "
        "(tools without descriptions, as Harbor writes them, get one from their name and schema where it reads them).",
    ),
) -> None:
    """Write the SFT dataset of ROLLOUTS: `messages` + `tools` + provenance columns, a ShareGPT variant and a card.

    Only attempts on task versions the pool's ledger has as accepted, that the verifier passed (full reward,
    ended ok) and that a model (not a script) produced are written, unless an --include flag says otherwise.
    Rows that cannot be exported (repaired text, broken tool-call structure, oversized messages) are left
    out too; all are listed with their reason. --transform and --for-template rewrite each session into a
    shape a chat template renders (parallel calls split, text apart from tool calls); the card names them.

    Example: qaflow export sft tasks_repo --out exports/sft --test-fraction 0.1
    Example: qaflow export sft tasks_repo --out exports/sft-gptoss --for-template gptoss
    Example: qaflow export sft filtered/kept.parquet --pool tasks_repo --funnel filtered/funnel.json --out exports/sft

    Without --funnel the rollouts are first filtered by `qaflow filter`'s built-in rules (--no-filter: not).
    """
    from curation.export import GateOptions, Provenance, export_sft, load_funnel

    token = _check_before(out, force, push)
    if tokenizer is not None:
        from qaflow.model_source import ModelPathError, model_source

        try:
            model_source(tokenizer)
        except ModelPathError as e:
            usage_error(f"--tokenizer: {e}")
    transforms = [name.strip() for value in transform for name in value.split(",") if name.strip()]
    try:
        chosen_transforms(transforms, for_template)
    except ValueError as e:
        usage_error(f"--transform/--for-template: {e}")
    frame, rollout_pool = _rollouts_and_pool(rollouts, pool)
    split = _split(test_fraction, test_tasks, split_seed)
    gate = GateOptions(
        include_unaccepted=include_unaccepted,
        allow_harness_holes=allow_harness_holes,
        include_ungraded=include_ungraded,
        include_scripted=include_scripted,
        include_hacks=include_hacks,
        include_failed=include_failed,
    )
    steps = None
    if funnel is not None:
        steps = _guard(lambda: load_funnel(funnel))
    elif apply_filter:
        frame, steps = _builtin_filter(frame, quiet=as_json == "-")
    provenance = Provenance.from_argv([rollouts, *([funnel] if funnel else [])])
    report = _export(
        lambda: export_sft(
            frame,
            out,
            pool=rollout_pool,
            gate=gate,
            split=split,
            funnel=steps,
            provenance=provenance,
            sharegpt=sharegpt,
            max_message_chars=max_message_chars,
            license=license,
            overwrite=force,
            tokenizer=tokenizer,
            transforms=transforms,
            for_template=for_template,
        )
    )
    if report.token_lengths is not None and as_json != "-":
        console().print(report.token_lengths.advice())
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
    pool: Path | None = typer.Option(None, "--pool", help="With rollouts: " + POOL_HELP),
    include_unaccepted: IncludeUnacceptedOpt = False,
    allow_harness_holes: AllowHarnessHolesOpt = False,
    include_ungraded: IncludeUngradedOpt = False,
    include_scripted: IncludeScriptedOpt = False,
    include_hacks: IncludeHacksOpt = False,
    test_fraction: TestFractionOpt = 0.0,
    test_tasks: TestTasksOpt = None,
    split_seed: SplitSeedOpt = 0,
    system_prompt: Path | None = typer.Option(
        None, "--system-prompt", help="With a pool: a text file used as the system message of built prompts."
    ),
    push: PushOpt = None,
    private: PrivateOpt = False,
    license: str | None = typer.Option(None, "--license", help=LICENSE_HELP),
    force: bool = typer.Option(False, "--force", help=FORCE_HELP),
    as_json: JsonOpt = None,
) -> None:
    """Write the RL dataset: one row per task version with its prompt, tools, grouping keys and per-effort stats.

    With rollouts, only task versions the pool (--pool) has as accepted are written, unless
    --include-unaccepted; prompts and stats count only correctly graded attempts of models.

    Example: qaflow export rl tasks_repo --out exports/rl --test-fraction 0.1
    Example: qaflow export rl filtered/kept.parquet --pool tasks_repo --out exports/rl
    """
    from curation.export import GateOptions, Provenance, export_rl

    token = _check_before(out, force, push)
    statuses = _statuses(status)
    split = _split(test_fraction, test_tasks, split_seed)
    gate = GateOptions(
        include_unaccepted=include_unaccepted,
        allow_harness_holes=allow_harness_holes,
        include_ungraded=include_ungraded,
        include_scripted=include_scripted,
        include_hacks=include_hacks,
    )
    inputs: list[Path] = [source]
    if _is_rollouts(source):
        if rollouts is not None:
            usage_error("--rollouts goes with a pool; ROLLOUTS_OR_POOL is already rollouts")
        frame = _read_rollouts(source)
        inputs += [pool] if pool is not None else []
        report = _export(
            lambda: export_rl(
                frame,
                out,
                pool=pool,
                gate=gate,
                split=split,
                provenance=Provenance.from_argv(inputs),
                license=license,
                overwrite=force,
            )
        )
    else:
        extra = _read_rollouts(rollouts) if rollouts is not None else None
        inputs += [rollouts] if rollouts is not None else []
        prompt = _read_text(system_prompt) if system_prompt is not None else None
        if pool is not None:
            usage_error("--pool goes with rollouts; ROLLOUTS_OR_POOL is already a pool")
        report = _export(
            lambda: export_rl(
                source,
                out,
                rollouts=extra,
                status=statuses,
                gate=gate,
                split=split,
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
    test_fraction: TestFractionOpt = 0.0,
    test_tasks: TestTasksOpt = None,
    split_seed: SplitSeedOpt = 0,
    push: PushOpt = None,
    private: PrivateOpt = False,
    license: str | None = typer.Option(None, "--license", help=LICENSE_HELP),
    force: bool = typer.Option(False, "--force", help=FORCE_HELP),
    as_json: JsonOpt = None,
) -> None:
    """Write a pool's tasks as rows with every file, so each task can be rebuilt (`rows_to_task_dir`).

    Example: qaflow export tasks ./tasks_repo --status accepted,needs_repair --out exports/tasks
    """
    from curation.export import Provenance, export_tasks

    token = _check_before(out, force, push)
    statuses = _statuses(status)
    split = _split(test_fraction, test_tasks, split_seed)
    if not pool.is_dir():
        usage_error(f"{pool}: no such pool folder")
    report = _export(
        lambda: export_tasks(
            pool,
            out,
            status=statuses,
            max_file_bytes=max_file_bytes,
            split=split,
            provenance=Provenance.from_argv([pool]),
            license=license,
            overwrite=force,
        )
    )
    _finish(report, push, token, private, as_json)


def _check_before(out: Path, force: bool, push: str | None) -> str | None:
    """What can fail before any work: the output folder, and the token when pushing."""
    from curation.export.common import prepare_out_dir, require_hub_token

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
    from curation.export.common import parse_statuses

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


def _builtin_filter(frame: pl.DataFrame, *, quiet: bool) -> tuple[pl.DataFrame, list[FunnelStep]]:
    """The rows `qaflow filter`'s built-in rules keep, and their funnel (the method's rollout filter: SFT data is
    filtered rollouts, never the raw ones)."""
    from curation.export import FunnelStep
    from curation.filters import FilterConfig, apply_filters

    result = apply_filters(frame, FilterConfig())
    reasons = result.removed.group_by("rule", "reason").len("n").to_dicts()
    steps = [FunnelStep(name="input", kept=frame.height)] + [
        FunnelStep(
            name=row["rule"],
            kept=row["rows_out"],
            removed=row["removed"],
            reasons={r["reason"]: r["n"] for r in reasons if r["rule"] == row["rule"]},
        )
        for row in result.funnel.to_dicts()
    ]
    if not quiet:
        console().print(
            f"filtered with `qaflow filter`'s built-in rules (no --funnel): {result.kept.height} of {frame.height} "
            "rows kept; --no-filter exports them all"
        )
    return result.kept, steps


def _rollouts_and_pool(rollouts: Path, pool: Path | None) -> tuple[pl.DataFrame, Path | None]:
    """The rollout frame of ROLLOUTS (parquet, or a pool's recorded rollouts) and the pool they ran on."""
    if _is_rollouts(rollouts):
        return _read_rollouts(rollouts), pool
    if pool is not None and pool.resolve() != rollouts.resolve():
        usage_error(f"--pool {pool}: ROLLOUTS is already a pool ({rollouts})")
    from qaflow.models.frame import records_to_frame
    from qaflow.pool import Pool

    with Pool.open(rollouts, create=False) as opened:
        return records_to_frame(opened.ledger.rollouts()), rollouts


def _split(test_fraction: float, test_tasks: Path | None, seed: int) -> SplitSpec | None:
    from curation.export.common import SplitSpec

    if test_tasks is not None and test_fraction:
        usage_error("--test-tasks and --test-fraction: give one")
    if test_tasks is None:
        return SplitSpec(test_fraction=test_fraction, seed=seed) if test_fraction else None
    return SplitSpec(test_tasks=frozenset(_task_names(test_tasks)))


def _task_names(path: Path) -> list[str]:
    """Task names from a task frame (parquet/JSONL with a `name` column) or a text file (one per line)."""
    if not path.is_file():
        usage_error(f"--test-tasks {path}: no such file")
    suffix = path.suffix.lower()
    if suffix in (".parquet", ".jsonl", ".json"):
        try:
            frame = pl.read_parquet(path) if suffix == ".parquet" else pl.read_ndjson(path)
        except (OSError, pl.exceptions.PolarsError) as e:
            usage_error(f"--test-tasks {path}: cannot read: {str(e).splitlines()[0]}")
        if "name" not in frame.columns:
            usage_error(f"--test-tasks {path}: no `name` column (columns: {', '.join(frame.columns)})")
        return [str(n) for n in frame["name"].drop_nulls().to_list()]
    return [line.strip() for line in _read_text(path).splitlines() if line.strip() and not line.startswith("#")]


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


def _finish(report: ExportReport, push: str | None, token: str | None, private: bool, as_json: str | None) -> None:
    from curation.export import push_export

    url = None
    if push:
        try:
            url = push_export(report.out_dir, push, private=private, token=token)
        except OSError as e:
            console(stderr=True).print(f"[red]error:[/red] push to {escape(push)} failed: {escape(str(e))}")
            raise typer.Exit(1) from e
    if as_json:
        emit_json(report, as_json)
        return
    out = console()
    out.print(escape(report.summary()))
    _print_removed(report.removed)
    for note in report.notes:
        out.print(f"note: {escape(note)}")
    for name, splits in report.configs.items():
        for split, pattern in splits.items():
            out.print(f"  config {name}, split {split}: {escape(str(report.out_dir / pattern))}")
    if url:
        out.print(f"pushed to {url}")
