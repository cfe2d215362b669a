"""CLI: `qaflow pipeline run CONFIG.yaml`, the curation stages as one resumable batch job."""

from __future__ import annotations

import sys
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
    include_candidates: Annotated[
        bool,
        typer.Option(
            "--include-candidates",
            help="Also put hardened candidate versions (never accepted) in the tasks dataset (config: "
            "export.include_candidates); on a finished run, with --from export",
        ),
    ] = False,
) -> None:
    """Run source -> dedup -> decontam -> length -> mix -> augment -> audit -> repair -> harden -> rollout ->
    rollout filter -> export, resuming finished stages; writes OUT/datasets/, OUT/funnel.json and OUT/funnel.png.
    The datasets hold accepted task versions only unless --include-candidates. With output to a file or a pipe,
    each stage's start and end, each task and each skip (with its reason) is a line, and a heartbeat line comes
    while a stage is silent.

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
    from curation.cli.pipeline_log import PipelineLog, stage_notes
    from curation.pipeline import STAGES

    if include_candidates:
        config.export.include_candidates = True
    err = console(stderr=True)
    json_on_stdout = as_json == "-"
    logged = next((s for s in ((sys.stderr,) if json_on_stdout else (sys.stdout, sys.stderr)) if not s.isatty()), None)
    try:
        with PipelineLog(STAGES, lines=logged, bar=err if err.is_terminal else None) as log:
            pipeline = Pipeline(config, executor=workers, progress=log.say, on_start=log.start, on_stage=log.end)
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
    for s in report.stages:
        for note in stage_notes(s):
            out.print(escape(f"{s.stage}: {note}"), soft_wrap=True)
    out.print(f"funnel: {report.output_dir / 'funnel.png'}")
