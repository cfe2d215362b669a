"""CLI: `qaflow pipeline run CONFIG.yaml`, the curation stages as one resumable batch job."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from qaflow.cli.options import ExecutorOpt, JsonOpt
from qaflow.cli.output import console, emit_json, usage_error
from qaflow.errors import ConfigError

app = typer.Typer(help="Run the curation pipeline as one resumable batch job.", no_args_is_help=True)


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="pipeline")


@app.command("run")
def run_cmd(
    config_file: Annotated[Path, typer.Argument(metavar="CONFIG", help="Pipeline YAML (see pipelines/)")],
    start_from: Annotated[str | None, typer.Option("--from", help="Redo this stage and the ones after it")] = None,
    executor: ExecutorOpt = "local",
    address: Annotated[str | None, typer.Option(help="Ray address (auto, ray://host:port) with --executor ray")] = None,
    jobs: Annotated[int, typer.Option("--jobs", "-j", min=1, help="Trials at once (local executor)")] = 2,
    as_json: JsonOpt = None,
) -> None:
    """Run source -> dedup -> decontam -> length -> mix -> augment -> audit -> repair -> harden -> rollout ->
    rollout filter -> export, resuming finished stages; writes OUT/datasets/, OUT/funnel.json and OUT/funnel.png.

    Example: qaflow pipeline run pipelines/tasks_repo.yaml
    """
    from curation.pipeline import Pipeline, PipelineConfig

    try:
        config = PipelineConfig.load(config_file)
    except ConfigError as e:
        usage_error(str(e))
    if config.model:
        from qaflow.errors import LLMError
        from qaflow.llm import LLMConfig
        from qaflow.llm.client import check_model

        try:
            check_model(LLMConfig(model=config.model))  # before any stage spends anything
        except LLMError as e:
            usage_error(f"{config_file}: model: {e}")
    workers = None
    if executor != "local" or address:
        from qaflow.executors import ExecutorError, executor_from_options

        try:
            workers = executor_from_options(executor, address, jobs)
        except ExecutorError as e:
            usage_error(str(e))
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from curation.pipeline import STAGES

    err = console(stderr=True)
    try:
        columns = (TextColumn("[bold]pipeline[/bold]"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                   TextColumn("{task.description}"))  # fmt: skip
        with Progress(*columns, console=err, transient=True) as progress:
            bar = progress.add_task("", total=len(STAGES))
            pipeline = Pipeline(
                config,
                executor=workers,
                progress=lambda m: progress.update(bar, description=escape(m)),
                on_stage=lambda _info: progress.advance(bar),
            )
            report = pipeline.run(start_from=start_from)
    except ValueError as e:
        usage_error(str(e))
    finally:
        if workers is not None:
            workers.close()
    if as_json:
        emit_json(report, as_json)
        return
    table = Table(title=f"pipeline {escape(report.name)} · {report.output_dir}", title_justify="left")
    for col in ("stage", "in", "out", "unit", "seconds", "note"):
        table.add_column(col)
    for s in report.stages:
        note = s.skipped or ", ".join(
            f"{k}: {v}" for k, v in s.info.items() if k in ("verdicts", "outcomes", "hardened")
        )
        table.add_row(s.stage, str(s.rows_in), str(s.rows_out), s.unit, f"{s.seconds:.1f}", escape(str(note)))
    out = console()
    out.print(table)
    for name, path in report.datasets.items():
        out.print(f"dataset [bold]{name}[/bold]: {path}")
    out.print(f"funnel: {report.output_dir / 'funnel.png'}")
