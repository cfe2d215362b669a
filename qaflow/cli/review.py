"""CLI: `qaflow review TASK...`: an LLM rubric check per task (advisory `lint` warnings, stored in
the task's pool when it is in one)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from pydantic import ValidationError
from rich.markup import escape
from rich.table import Table

from qaflow.cli.llm_options import MODEL_ENV, llm_from_cli
from qaflow.cli.options import JsonOpt
from qaflow.cli.output import console, emit_json, usage_error
from qaflow.errors import LLMError, TaskError
from qaflow.ledger.db import LedgerError
from qaflow.repair.review import TaskReview, review_task, store_review
from qaflow.task import Task, find_task_dirs

STYLE = {"pass": "green", "fail": "red", "not_applicable": "dim"}


def register(app: typer.Typer) -> None:
    app.command("review")(review)


def print_review(review: TaskReview) -> None:
    table = Table(title=f"{review.task} ({review.version[:12]}, {review.model})", show_lines=False)
    table.add_column("criterion")
    table.add_column("outcome")
    table.add_column("explanation", overflow="fold")
    for r in review.results:
        table.add_row(r.criterion, f"[{STYLE[r.outcome]}]{r.outcome}[/]", escape(r.explanation))
    out = console()
    out.print(table)
    stored = f"; stored in {review.stored_in}" if review.stored_in else ""
    out.print(f"{len(review.findings)} lint warning(s){stored}")


def review(
    paths: Annotated[list[Path], typer.Argument(help="Task folders or pools (folders of task folders)")],
    model: Annotated[str | None, typer.Option("--model", "-m", help=f"litellm model; default: env {MODEL_ENV}")] = None,
    as_json: JsonOpt = None,
    cache_dir: Annotated[Path | None, typer.Option(help="On-disk response cache folder")] = None,
    script: Annotated[Path | None, typer.Option(hidden=True, help="JSON file of scripted replies")] = None,
) -> None:
    """Rubric-review tasks with an LLM (Terminal-Bench quality-check style). Advisory: failed criteria
    become `lint` warnings; the exit status is 0 unless a task or the model fails.

    Example: qaflow review tasks_repo/csv-sum --model openai/gpt-4o-mini --json reviews.json
    """
    try:
        llm = llm_from_cli(model, cache_dir=cache_dir, script=script)
    except (OSError, ValueError, ValidationError) as e:
        usage_error(f"--script: {e}")
    if llm is None:
        usage_error(f"no model: pass --model or set {MODEL_ENV}")
    task_dirs = [d for p in paths for d in find_task_dirs(p)]
    if not task_dirs:
        usage_error("no task folders (with a task.toml) under the given paths")
    reviews: list[TaskReview] = []
    failed = False
    err = console(stderr=True)
    for task_dir in task_dirs:
        try:
            task = Task.load(task_dir)
            result = review_task(task, llm)
        except (TaskError, LLMError) as e:
            err.print(f"[red]error:[/red] {escape(str(e))}")
            failed = True
            continue
        try:
            stored = store_review(result)
        except LedgerError as e:  # another run holds the pool, or its ledger cannot be written
            err.print(f"[red]error:[/red] {escape(str(e))}")
            failed = True
            continue
        result.stored_in = str(stored) if stored else None
        reviews.append(result)
        if not as_json:
            print_review(result)
    if as_json:
        emit_json([r.model_dump(mode="json") for r in reviews], as_json)
    if failed:
        raise typer.Exit(1)
