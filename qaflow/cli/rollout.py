"""CLI: `qaflow rollout run POOL` runs the coding agent on every task at several efforts; `qaflow rollout stats`
prints pass rates, pass@k and difficulty bands."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import polars as pl
import typer
from pydantic import ValidationError
from rich.markup import escape
from rich.table import Table

from qaflow.cli.llm_options import MODEL_ENV, load_script
from qaflow.cli.options import (
    AddressOpt,
    BackendOpt,
    DefaultCommandGroup,
    ExecutorOpt,
    JsonOpt,
    NetworkOpt,
    OfflineOpt,
    RuntimeOpt,
    backend_with_runtime,
)
from qaflow.cli.output import console, emit_json, usage_error
from qaflow.cli.progress import RunProgress
from qaflow.config_file import read_config_data
from qaflow.errors import ConfigError, LLMError, SandboxUnavailableError
from qaflow.executors import ExecutorError, executor_from_options
from qaflow.interrupts import Interrupted, stop_on_signals
from qaflow.ledger import LedgerError
from qaflow.models.frame import RolloutsError, read_rollouts, records_to_frame
from qaflow.models.records import VersionStatus
from qaflow.models.rollout import Effort, RolloutRecord
from qaflow.pool import Pool, PoolError
from qaflow.rollouts.job import RolloutJobConfig, run_rollouts
from qaflow.rollouts.stats import pass_table, task_bands
from qaflow.sandbox.spec import RuntimeNetwork

app = typer.Typer(cls=DefaultCommandGroup, no_args_is_help=True)


@app.callback()
def _group() -> None:
    """Roll out the coding agent over a pool (`run`, the default verb) and read the results (`stats`)."""


def register(root: typer.Typer) -> None:
    app.command("run")(rollout)
    app.command("stats")(rollout_stats)
    root.add_typer(app, name="rollout")
    root.command(
        "rollout-stats",
        deprecated=True,
        help="Same as `qaflow rollout stats` (old spelling).\n\nExample: qaflow rollout-stats tasks_repo --k 1,4",
    )(rollout_stats)


def _config_file(path: Path) -> dict[str, Any]:
    try:
        data = read_config_data(path, what="the rollout config")
    except ConfigError as e:
        usage_error(str(e))
    if not isinstance(data, dict):
        usage_error(f"{path}: the rollout config must be a mapping")
    return data


def _efforts(text: str) -> list[Effort]:
    known = [e.value for e in Effort]
    wanted = [e.strip() for e in text.split(",") if e.strip()]
    bad = [e for e in wanted if e not in known]
    if bad or not wanted:
        usage_error(f"--efforts: unknown effort(s) {', '.join(bad) or '(none given)'}; choose from {', '.join(known)}")
    return [Effort(e) for e in dict.fromkeys(wanted)]


def rollout(
    pool_dir: Annotated[Path, typer.Argument(metavar="POOL", help="Pool folder (task folders at any depth)")],
    model: Annotated[str | None, typer.Option(help="litellm model string (else env QAFLOW_MODEL)")] = None,
    efforts: Annotated[str, typer.Option(help="Comma-separated: off, low, medium, xhigh")] = "low,medium,xhigh",
    attempts: Annotated[int, typer.Option("--attempts", "-k", min=1, help="Attempts per task and effort")] = 1,
    jobs: Annotated[int, typer.Option("--jobs", "-j", min=1, help="Attempts run at once (local executor)")] = 2,
    backend: BackendOpt = "auto",
    runtime: RuntimeOpt = None,
    offline: OfflineOpt = False,
    network: NetworkOpt = RuntimeNetwork.TASK,
    executor: ExecutorOpt = "local",
    address: AddressOpt = None,
    round_: Annotated[int, typer.Option("--round", min=0, help="Collection round (a new round reruns all)")] = 0,
    max_turns: Annotated[int | None, typer.Option(min=1, help="Model turns per attempt (default 50)")] = None,
    max_wall: Annotated[float | None, typer.Option(help="Seconds per attempt (default: the task's timeout)")] = None,
    status: Annotated[
        str | None, typer.Option(help="Only tasks with these statuses, comma-separated (e.g. accepted)")
    ] = None,
    out_dir: Annotated[
        Path | None, typer.Option("--out", help="Parquet shards (default POOL/.qaflow/rollouts)")
    ] = None,
    config_file: Annotated[
        Path | None, typer.Option("--config", help="YAML/TOML RolloutJobConfig (model, harness, efforts map)")
    ] = None,
    force: Annotated[bool, typer.Option(help="Rerun items already in the ledger")] = False,
    as_json: JsonOpt = None,
    script: Annotated[Path | None, typer.Option(hidden=True, help="Scripted replies (offline tests)")] = None,
) -> None:
    """Roll out the coding agent (tools read, write, edit, bash) on every task at each effort, K times.

    Every attempt is a trial: a fresh sandbox, the agent under turn, token and time limits, then the
    verifier. Records (full trajectory, per-turn usage, reasoning tokens, reward, exit status) go to
    the pool's ledger and to parquet shards; a rerun skips what is recorded. Prints pass rate,
    pass@k and difficulty band per task and effort.

    With --executor ray every attempt is a Ray task (the task's CPUs and memory) on the cluster at
    --address; records come back to this process, which alone writes the ledger.

    Also spelled `qaflow rollout POOL ...` (run is the default verb).

    Example: qaflow rollout run tasks_repo --model openai/gpt-4o-mini --efforts low,medium,xhigh -k 4 -j 4

    Long on purpose: a command's option list and its one flow (config, model, job, table).
    """
    import os

    data = _config_file(config_file) if config_file else {}
    model_data = dict(data.get("model") or {})
    chosen = model or model_data.get("model") or os.environ.get(MODEL_ENV)
    if not chosen:
        usage_error(f"no model: pass --model, set {MODEL_ENV}, or give model.model in --config")
    model_data["model"] = chosen
    if script is not None:
        model_data["script"] = [r.model_dump() for r in load_script(script)]
    data["model"] = model_data
    sandbox = backend_with_runtime(backend, runtime)
    data.update(efforts=_efforts(efforts), attempts=attempts, jobs=jobs, backend=sandbox, round=round_, out_dir=out_dir)
    if offline:
        data["offline"] = True
    if network is not RuntimeNetwork.TASK:
        data["network"] = network
    harness = dict(data.get("harness") or {})
    if max_turns is not None:
        harness["max_turns"] = max_turns
    if max_wall is not None:
        harness["max_wall_s"] = max_wall
    data["harness"] = harness
    if status:
        try:
            data["statuses"] = [VersionStatus(s.strip()) for s in status.split(",") if s.strip()]
        except ValueError as e:
            usage_error(f"--status: {e}")
    try:
        config = RolloutJobConfig.model_validate(data)
    except ValidationError as e:
        usage_error(f"{config_file or 'options'}: invalid rollout config: {e}")
    if not pool_dir.is_dir():
        usage_error(f"{pool_dir}: no such folder")
    err = console(stderr=True)
    try:
        workers = executor_from_options(executor, address, jobs)
    except ExecutorError as e:
        usage_error(str(e))
    stopped: Interrupted | None = None
    try:
        with stop_on_signals(), workers, Pool.open(pool_dir) as pool, RunProgress(err, "rollout") as progress:

            def on_record(record: RolloutRecord) -> None:
                mark = "pass" if record.passed else record.exit_status.value
                seconds = record.timings.get("total", 0.0)
                progress.done(f"{record.task} {record.effort.value} #{record.attempt} {mark}, {seconds:.1f} s")

            try:
                report = run_rollouts(
                    pool, config, force=force, on_record=on_record, on_plan=progress.set_total, executor=workers
                )
            except Interrupted as e:
                stopped, report = e, e.done[0]
            frame = records_to_frame(pool.ledger.rollouts())
    except (PoolError, LedgerError, SandboxUnavailableError, LLMError) as e:
        usage_error(str(e))
    for path, reason in report.invalid_tasks:
        err.print(f"[yellow]skipped {escape(path)}: {escape(reason)}[/yellow]")
    for rid, reason in report.failed:
        err.print(f"[red]not run {escape(rid[:12])} ({escape(reason)}); a rerun tries it again[/red]")
    frame = frame.filter(pl.col("model") == config.model.model, pl.col("round") == config.round)
    table = pass_table(frame, ks=tuple(sorted({1, config.attempts})))
    if as_json:
        emit_json(table.to_dicts(), as_json)
    else:
        _print_pass_table(table)
    total = report.usage.get("total", {})
    err.print(
        f"[bold]{report.ran} attempts run ({report.retried} retried after an infrastructure or model error), "
        f"{report.skipped} already recorded[/bold]; "
        f"{total.get('completion_tokens', 0)} completion tokens, ${total.get('cost_usd', 0.0):.4f}; "
        f"{len(report.shards)} new shard(s) in {config.out_dir or pool_dir / '.qaflow' / 'rollouts'}"
    )
    if stopped is not None:
        err.print(f"[yellow]interrupted:[/yellow] {report.ran} results recorded; rerun to resume")
        raise typer.Exit(stopped.exit_status)


def _print_pass_table(table: pl.DataFrame) -> None:
    out = console()
    shown = Table(title="rollouts: pass rate by task and effort", title_justify="left")
    k_cols = [c for c in table.columns if c.startswith("pass@")]
    columns = ("task", "effort", "attempts", "passes", "errors", "pass_rate", "band", *k_cols, "median_thinking_passed")
    for col in columns:
        shown.add_column(col.replace("median_thinking_passed", "thinking (pass, median)"))
    for row in table.iter_rows(named=True):
        ks = ["—" if row[c] is None else f"{row[c]:.2f}" for c in k_cols]
        thinking = "—" if row["median_thinking_passed"] is None else f"{row['median_thinking_passed']:.0f}"
        rate = "—" if row["pass_rate"] is None else f"{row['pass_rate']:.2f}"
        shown.add_row(
            escape(row["task"]), row["effort"], str(row["attempts"]), str(row["passes"]), str(row["errors"]),
            rate, row["band"] or "—", *ks, thinking,
        )  # fmt: skip
    out.print(shown)
    if table["errors"].sum():
        out.print("errors: attempts that ended in an infrastructure or model error, not counted; a rerun retries them")


def rollout_stats(
    source: Annotated[Path, typer.Argument(help="A pool folder (its ledger) or rollout parquet file/folder")],
    k: Annotated[str, typer.Option(help="pass@k values, comma-separated")] = "1",
    as_json: JsonOpt = None,
) -> None:
    """Pass rate, pass@k and difficulty band per task and effort, and one band per task.

    Bands: impossible 0, very_hard <= 25%, hard <= 50%, medium <= 75%, easy < 100%, trivial 100%.

    Example: qaflow rollout stats tasks_repo --k 1,4
    """
    try:
        ks = tuple(sorted({int(x) for x in k.split(",") if x.strip()}))
    except ValueError:
        usage_error(f"--k: {k!r} is not a comma-separated list of integers")
    if not ks or min(ks) < 1:
        usage_error("--k: values must be >= 1")
    if (source / ".qaflow" / "ledger.sqlite").is_file():
        with Pool.open(source, create=False) as pool:
            frame = records_to_frame(pool.ledger.rollouts())
    else:
        try:
            frame = read_rollouts(source)
        except RolloutsError as e:
            usage_error(str(e))
        except (pl.exceptions.PolarsError, OSError) as e:
            usage_error(f"{source}: cannot read rollouts: {e}")
    if frame.is_empty():
        usage_error(f"{source}: no rollouts (roll out with `qaflow rollout run POOL`, or give their parquet shards)")
    table = pass_table(frame, ks=ks)
    bands = task_bands(frame)
    if as_json:
        emit_json({"by_effort": table.to_dicts(), "tasks": bands.to_dicts()}, as_json)
        return
    _print_pass_table(table)
    counts = bands.group_by("band").len().sort("band")
    console().print("task bands: " + ", ".join(f"{r['band']} {r['len']}" for r in counts.iter_rows(named=True)))
