"""CLI of the SFT stage: `qaflow sft train|select|check|tiny-model`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from qaflow.cli.options import BackendOpt, JsonOpt
from qaflow.cli.output import console, emit_json, usage_error
from qaflow.errors import ConfigError, LLMError, TaskError
from qaflow.model_source import ModelPathError, model_source
from qaflow.models.rollout import Effort

if TYPE_CHECKING:
    from sft.select import Selection

app = typer.Typer(
    help="Supervised fine-tuning on whole agent sessions, tool observations masked.", no_args_is_help=True
)


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="sft")


@app.command("train")
def train_cmd(
    config_file: Annotated[Path, typer.Argument(metavar="CONFIG", help="YAML SFTTrainConfig")],
    allow_truncation: Annotated[
        bool,
        typer.Option(
            "--allow-truncation", help="Cut a session longer than the context after its last assistant turn that fits"
        ),
    ] = False,
    recipe: Annotated[
        str | None,
        typer.Option(
            help="Preset: pi (LoRA all-linear, bf16 where supported, 1 epoch) or openthoughts (full, 4e-5, "
            "cosine, 7 epochs); the config file and explicit flags win"
        ),
    ] = None,
    epochs: Annotated[float | None, typer.Option(min=0.0, help="Epochs (over the config and the recipe)")] = None,
    learning_rate: Annotated[float | None, typer.Option(min=0.0, help="Peak learning rate (over both)")] = None,
    lr_scheduler: Annotated[str | None, typer.Option(help="Schedule, e.g. cosine, linear (over both)")] = None,
) -> None:
    """Train with TRL's SFTTrainer (LoRA on all linear layers by default) on an exported SFT dataset.

    Sessions are tokenized with only assistant-generated tokens in the loss (reasoning, text, tool
    calls, end-of-turn), each row's effort rendered into its session; a session longer than the model's
    context (or masking.max_length) is left out and counted, or cut after a whole assistant turn with
    --allow-truncation.

    Example: qaflow sft train sft.yaml --recipe openthoughts --epochs 3
    """
    from pydantic import ValidationError

    from sft.config import SFTTrainConfig
    from sft.recipes import RECIPES, apply_recipe

    try:
        config = SFTTrainConfig.load(config_file)
    except ConfigError as e:
        usage_error(str(e))
    flags = {"epochs": epochs, "learning_rate": learning_rate, "lr_scheduler_type": lr_scheduler}
    explicit = {k: v for k, v in flags.items() if v is not None}
    if recipe is not None and recipe not in RECIPES:
        usage_error(f"--recipe: unknown recipe {recipe!r}; choose from {', '.join(RECIPES)}")
    try:  # validated again, so a bad flag is one error line
        merged = apply_recipe(config, recipe, explicit) if recipe else config.model_copy(update=explicit)
        config = SFTTrainConfig.model_validate(merged.model_dump())
    except ValidationError as e:
        usage_error(f"sft train: {e.errors()[0]['loc'][0]}: {e.errors()[0]['msg']}")
    if recipe is not None:
        console().print(f"recipe {recipe}: {RECIPES[recipe].source}")
    from sft.train import train

    if allow_truncation:
        masking = config.masking.model_copy(update={"overlong": "truncate_turns"})
        config = config.model_copy(update={"masking": masking})
    try:
        report = train(config)
    except ModelPathError as e:
        usage_error(str(e))
    out = console()
    if report.precision is not None and report.precision.note:
        out.print(f"[yellow]precision:[/yellow] {report.precision.note}")
    out.print(
        f"[bold]trained on {report.train_examples} sessions[/bold] ({report.eval_examples} for validation from "
        f"{report.eval_split}, "
        f"{len(report.dropped)} dropped, {report.truncated} truncated at a turn boundary; context "
        f"{report.context_length or 'unlimited'} tokens)"
    )
    for index, reason in report.dropped[:20]:
        out.print(f"  dropped row {index}: {escape(reason)}")
    for c in report.checkpoints:
        out.print(f"  {c.path.name}: step {c.step}, validation loss {c.eval_loss}")


def _efforts(text: str, option: str) -> list[Effort]:
    known = [e.value for e in Effort]
    wanted = [e.strip() for e in text.split(",") if e.strip()]
    bad = [e for e in wanted if e not in known]
    if bad or not wanted:
        usage_error(f"{option}: unknown effort(s) {', '.join(bad) or '(none given)'}; choose from {', '.join(known)}")
    return [Effort(e) for e in dict.fromkeys(wanted)]


def _budgets(values: list[str]) -> dict[Effort, int]:
    """`effort=N` pairs (repeatable --thinking-budget) as a budget table; a bad pair is a usage error."""
    known = ", ".join(e.value for e in Effort)
    budgets: dict[Effort, int] = {}
    for value in values:
        effort, _, number = value.partition("=")
        if effort.strip() not in {e.value for e in Effort} or not number.strip().isdigit():
            usage_error(f"--thinking-budget: {value!r} is not EFFORT=N with EFFORT one of {known} and N >= 0")
        budgets[Effort(effort.strip())] = int(number)
    return budgets


@app.command("select")
def select_cmd(
    run_dir: Annotated[Path, typer.Argument(metavar="RUN", help="Output folder of `qaflow sft train`")],
    tasks: Annotated[Path, typer.Option("--tasks", help="Held-out task pool")],
    endpoint: Annotated[str | None, typer.Option(help="OpenAI-compatible base URL serving the checkpoints")] = None,
    served_model: Annotated[
        str, typer.Option(help="Served model name per checkpoint at --endpoint; {name} and {step} are filled in")
    ] = "{name}",
    backend: BackendOpt = "auto",
    subset: Annotated[int, typer.Option(min=0, help="Stage 1: tasks in the shortlist subset (0: no stage 1)")] = 16,
    shortlist_efforts: Annotated[
        str, typer.Option(help="Stage 1: efforts each checkpoint runs the subset at, comma-separated")
    ] = "low,medium,xhigh",
    shortlist: Annotated[int, typer.Option(min=1, help="Stage 1: checkpoints that go on to stage 2")] = 2,
    shortlist_attempts: Annotated[int, typer.Option(min=1, help="Stage 1: attempts per task and effort")] = 1,
    final_effort: Annotated[str, typer.Option(help="Stage 2: the effort on the full task set")] = "medium",
    attempts: Annotated[int, typer.Option(min=1, help="Stage 2: attempts per task")] = 1,
    max_turns: Annotated[int, typer.Option(min=1, help="Agent turns per attempt")] = 20,
    thinking_budget: Annotated[
        list[str] | None,
        typer.Option(
            "--thinking-budget",
            metavar="EFFORT=N",
            help="Thinking tokens of a local checkpoint at an effort, e.g. low=64 (repeatable; 0 = thinking off)",
        ),
    ] = None,
    all_tasks: Annotated[
        bool, typer.Option("--all-tasks", help="Evaluate on every task folder, accepted or not")
    ] = False,
    as_json: JsonOpt = None,
) -> None:
    """Choose the checkpoint of RUN that solves the most --tasks with the agent harness, in two stages.

    Stage 1 runs every checkpoint on a --subset of the tasks at each of --shortlist-efforts and keeps the
    best --shortlist; stage 2 runs those on every task at --final-effort (ties: lower validation loss, then
    fewer output tokens, then the earlier step; a tie is reported with the criterion that chose). Only the
    pool's accepted tasks are evaluated on unless --all-tasks. Without --endpoint each checkpoint is loaded
    locally (transformers, through litellm's custom-provider path) with each effort's thinking budget
    (--thinking-budget); with it, `openai/<served model>` at that URL. Results are cached in RUN/eval/ by
    checkpoint content, task version, effort, attempts and harness settings.

    Example: qaflow sft select runs/sft1 --tasks heldout_pool --backend docker --subset 16 --shortlist 2
    """
    from qaflow.agents.harness import HarnessConfig
    from qaflow.llm import LLMConfig
    from sft.select import HarnessEvaluator, SelectConfig, accepted_tasks, load_tasks, select_checkpoint
    from sft.train import checkpoint_infos

    infos = checkpoint_infos(run_dir)
    if not infos:
        usage_error(f"{run_dir}: no checkpoint-N folders")
    if not tasks.is_dir():
        usage_error(f"{tasks}: no such task pool")
    budgets = _budgets(thinking_budget or [])
    if budgets and endpoint:
        usage_error("--thinking-budget: budgets apply to local checkpoints, not to a model served at --endpoint")
    try:
        pool_tasks = load_tasks(tasks) if all_tasks else accepted_tasks(tasks)
    except (TaskError, ValueError) as e:
        usage_error(str(e))
    if not pool_tasks:
        usage_error(f"{tasks}: no task folders (task.toml) found")
    config = SelectConfig(
        subset_size=subset,
        shortlist_efforts=_efforts(shortlist_efforts, "--shortlist-efforts"),
        shortlist_attempts=shortlist_attempts,
        shortlist_size=shortlist,
        final_effort=_efforts(final_effort, "--final-effort")[0],
        final_attempts=attempts,
    )
    model_for = None
    if endpoint:

        def model_for(info: Any) -> LLMConfig:
            name = served_model.format(name=info.path.name, step=info.step)
            return LLMConfig(model=f"openai/{name}", api_base=endpoint, api_key_env=None)

    evaluator = HarnessEvaluator(
        cache_dir=run_dir / "eval",
        model_for=model_for,
        backend=backend,
        harness=HarnessConfig(max_turns=max_turns),
        thinking_budgets=budgets,
    )
    try:
        selection = select_checkpoint(infos, pool_tasks, evaluator, config)
    except LLMError as e:
        usage_error(str(e))
    if as_json:
        emit_json(selection, as_json)
        return
    print_selection(selection)


def print_selection(selection: Selection) -> None:
    """Both stages' tables (stage 1 only when it ran) and the choice."""
    out = console()
    config = selection.config
    if selection.shortlist:
        title = (
            f"stage 1: {len(selection.subset)} tasks at {', '.join(e.value for e in config.shortlist_efforts)}, "
            f"{config.shortlist_attempts} attempt(s) each"
        )
        first = Table(title=title, title_justify="left")
        efforts = [e.value for e in config.shortlist_efforts]
        for col in ("checkpoint", "step", "validation loss", *efforts, "solved", "mean output tokens", ""):
            first.add_column(col)
        for s in selection.shortlist:
            first.add_row(
                Path(s.checkpoint).name,
                str(s.step),
                _loss(s.eval_loss),
                *(f"{s.solved_by_effort[e]}/{len(selection.subset)}" for e in efforts),
                f"{s.solved}/{s.attempted}",
                f"{s.mean_output_tokens:.0f}",
                "shortlisted" if s.shortlisted else "",
            )
        out.print(first)
    attempted = selection.rows[0].attempted if selection.rows else 0
    second = Table(
        title=f"stage 2: {attempted} tasks at {config.final_effort.value}, {config.final_attempts} attempt(s) each",
        title_justify="left",
    )
    for col in ("checkpoint", "step", "validation loss", "tasks solved", "mean output tokens", ""):
        second.add_column(col)
    for r in selection.rows:
        marks = [
            m
            for m, on in (
                ("chosen", r.checkpoint == selection.chosen),
                ("lowest loss", r.checkpoint == selection.lowest_loss),
            )
            if on
        ]
        second.add_row(
            Path(r.checkpoint).name,
            str(r.step),
            _loss(r.eval_loss),
            f"{r.solved}/{r.attempted}",
            f"{r.mean_output_tokens:.0f}",
            ", ".join(marks),
        )
    out.print(second)
    out.print(f"[bold]chosen:[/bold] {escape(selection.chosen)}")
    if selection.tied:
        solved = next(r.solved for r in selection.rows if r.checkpoint == selection.chosen)
        names = ", ".join(Path(c).name for c in selection.tied)
        out.print(
            f"[yellow]tie:[/yellow] {len(selection.tied)} checkpoints ({escape(names)}) solve {solved} tasks: the "
            f"agentic evaluation cannot separate them; chosen by {selection.tie_break}"
        )
    if selection.lowest_loss and selection.lowest_loss != selection.chosen:
        out.print(f"lowest validation loss: {escape(selection.lowest_loss)}")


def _loss(value: float | None) -> str:
    return "—" if value is None else f"{value:.4f}"


@app.command("check")
def check_cmd(
    dataset: Annotated[Path, typer.Argument(help="Exported SFT dataset (save_to_disk folder or parquet)")],
    model: Annotated[str, typer.Option(help="Tokenizer folder (the model to train)")],
    max_length: Annotated[int | None, typer.Option(help="Longest session in tokens")] = None,
    template: Annotated[Path | None, typer.Option(help="Training chat template file")] = None,
    as_json: JsonOpt = None,
) -> None:
    """Render every session as training would and count, per role, the tokens that carry loss.

    Loss on a system, user or tool token is an error (exit code 1), as is an assistant turn without loss.
    Also the token-length distribution under the model's tokenizer and the max_length TRL's SFTTrainer
    needs to keep every session whole (its default of 1,024 cuts longer ones).

    Example: qaflow sft check exports/sft --model models/tiny
    """
    from datasets.exceptions import DatasetGenerationError
    from transformers import AutoTokenizer

    from sft.check import check_sessions
    from sft.lengths import token_lengths
    from sft.masking import MaskingConfig
    from sft.templates import training_template
    from sft.train import load_rows

    try:
        rows = load_rows(dataset)
    except FileNotFoundError as e:
        usage_error(str(e))
    except (ValueError, DatasetGenerationError) as e:  # pyarrow's ArrowInvalid is a ValueError: not parquet
        usage_error(f"{dataset}: cannot read an SFT dataset ({type(e).__name__}: {str(e).splitlines()[0]})")
    columns = list(rows.column_names)
    if "messages" not in columns:
        usage_error(f"{dataset}: not an SFT dataset: no `messages` column (columns: {', '.join(columns)})")
    try:
        source = model_source(model)
    except ModelPathError as e:
        usage_error(str(e))
    tokenizer = AutoTokenizer.from_pretrained(source)
    messages = rows["messages"]
    tools = rows["tools"] if "tools" in columns else [None] * len(rows)
    rendering = training_template(tokenizer, template)
    report = check_sessions(messages, tools, tokenizer, rendering, MaskingConfig(max_length=max_length))
    lengths = token_lengths(messages, tools, tokenizer, rendering, model) if len(rows) else None
    if as_json:
        emit_json(
            {
                "roles": {k: v.model_dump() for k, v in report.roles.items()},
                "errors": report.errors,
                "dropped": report.dropped,
                "lengths": lengths.model_dump() if lengths else None,
            },
            as_json,
        )
    else:
        table = Table(title=f"loss by role · {len(report.sessions)} sessions", title_justify="left")
        for col in ("role", "tokens", "tokens with loss"):
            table.add_column(col)
        for role, count in sorted(report.roles.items()):
            table.add_row(role, str(count.tokens), str(count.loss_tokens))
        console().print(table)
        if lengths is not None:
            spread = Table(title=f"session tokens under {escape(model)}", title_justify="left")
            for col in ("sessions", "min", "mean", "p50", "p90", "p99", "max"):
                spread.add_column(col)
            spread.add_row(
                *(str(v) for v in (lengths.sessions, lengths.min, f"{lengths.mean:.0f}")),
                *(str(v) for v in (lengths.p50, lengths.p90, lengths.p99, lengths.max)),
            )
            console().print(spread)
            console().print(lengths.advice())
        for error in report.errors[:50]:
            console().print(f"[red]error:[/red] {escape(error)}")
    if not report.ok:
        raise typer.Exit(1)


@app.command("tiny-model")
def tiny_model_cmd(dest: Annotated[Path, typer.Argument(help="Folder to write the model into")]) -> None:
    """Write a tiny Qwen3-style model (random weights, tokenizer built in code) for tests and examples.

    Example: qaflow sft tiny-model models/tiny
    """
    from sft.tiny_model import build_tiny_model

    console().print(f"wrote {build_tiny_model(dest)}")
