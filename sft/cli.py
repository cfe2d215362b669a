"""CLI of the SFT stage: `qaflow sft train|select|check|tiny-model`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from qaflow.cli.options import BackendOpt
from qaflow.cli.output import console, emit_json, usage_error
from qaflow.errors import ConfigError
from sft.model_source import ModelPathError, model_source

app = typer.Typer(
    help="Supervised fine-tuning on whole agent sessions, tool observations masked.", no_args_is_help=True
)


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="sft")


@app.command("train")
def train_cmd(config_file: Annotated[Path, typer.Argument(metavar="CONFIG", help="YAML SFTTrainConfig")]) -> None:
    """Train with TRL's SFTTrainer (LoRA on all linear layers by default) on an exported SFT dataset.

    Sessions are tokenized with only assistant-generated tokens in the loss (reasoning, text, tool
    calls, end-of-turn); overlong sessions are dropped or cut after a whole assistant turn.

    Example: qaflow sft train sft.yaml
    """
    from sft.config import SFTTrainConfig
    from sft.train import train

    try:
        config = SFTTrainConfig.load(config_file)
    except ConfigError as e:
        usage_error(str(e))
    try:
        report = train(config)
    except ModelPathError as e:
        usage_error(str(e))
    out = console()
    out.print(
        f"[bold]trained on {report.train_examples} sessions[/bold] ({report.eval_examples} for validation, "
        f"{len(report.dropped)} dropped, {report.truncated} truncated at a turn boundary)"
    )
    for index, reason in report.dropped[:20]:
        out.print(f"  dropped row {index}: {escape(reason)}")
    for c in report.checkpoints:
        out.print(f"  {c.path.name}: step {c.step}, validation loss {c.eval_loss}")


@app.command("select")
def select_cmd(
    run_dir: Annotated[Path, typer.Argument(metavar="RUN", help="Output folder of `qaflow sft train`")],
    tasks: Annotated[Path, typer.Option("--tasks", help="Held-out task pool")],
    endpoint: Annotated[str | None, typer.Option(help="OpenAI-compatible base URL serving the checkpoints")] = None,
    served_model: Annotated[
        str, typer.Option(help="Served model name per checkpoint at --endpoint; {name} and {step} are filled in")
    ] = "{name}",
    backend: BackendOpt = "auto",
    attempts: Annotated[int, typer.Option(min=1, help="Attempts per task")] = 1,
    max_turns: Annotated[int, typer.Option(min=1, help="Agent turns per attempt")] = 20,
    as_json: Annotated[bool, typer.Option("--json", help="Print the table as JSON")] = False,
) -> None:
    """Evaluate every checkpoint of RUN with the agent harness on --tasks and choose the one solving the most.

    Without --endpoint each checkpoint is loaded locally (transformers, through litellm's custom-provider
    path); with it, `openai/<served model>` at that URL. Results are cached in RUN/eval/.

    Example: qaflow sft select runs/sft1 --tasks heldout_pool --backend docker
    """
    from qaflow.agents.harness import HarnessConfig
    from qaflow.llm import LLMConfig
    from sft.select import HarnessEvaluator, select_checkpoint
    from sft.train import checkpoint_infos

    infos = checkpoint_infos(run_dir)
    if not infos:
        usage_error(f"{run_dir}: no checkpoint-N folders")
    if not tasks.is_dir():
        usage_error(f"{tasks}: no such task pool")
    model_for = None
    if endpoint:

        def model_for(info):  # type: ignore[no-untyped-def]
            name = served_model.format(name=info.path.name, step=info.step)
            return LLMConfig(model=f"openai/{name}", api_base=endpoint, api_key_env=None)

    evaluator = HarnessEvaluator(
        tasks, cache_dir=run_dir / "eval", model_for=model_for, backend=backend, attempts=attempts,
        harness=HarnessConfig(max_turns=max_turns),
    )  # fmt: skip
    selection = select_checkpoint(infos, evaluator)
    if as_json:
        emit_json(selection)
        return
    table = Table(title="checkpoints by agentic success", title_justify="left")
    for col in ("checkpoint", "step", "validation loss", "tasks solved", "mean output tokens", ""):
        table.add_column(col)
    for r in selection.rows:
        marks = [
            m
            for m, on in (
                ("chosen", r.checkpoint == selection.chosen),
                ("lowest loss", r.checkpoint == selection.lowest_loss),
            )
            if on
        ]
        loss = "—" if r.eval_loss is None else f"{r.eval_loss:.4f}"
        table.add_row(
            Path(r.checkpoint).name,
            str(r.step),
            loss,
            f"{r.solved}/{r.attempted}",
            f"{r.mean_output_tokens:.0f}",
            ", ".join(marks),
        )
    console().print(table)
    console().print(f"[bold]chosen:[/bold] {escape(selection.chosen)}")


@app.command("check")
def check_cmd(
    dataset: Annotated[Path, typer.Argument(help="Exported SFT dataset (save_to_disk folder or parquet)")],
    model: Annotated[str, typer.Option(help="Tokenizer folder (the model to train)")],
    max_length: Annotated[int | None, typer.Option(help="Longest session in tokens")] = None,
    template: Annotated[Path | None, typer.Option(help="Training chat template file")] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Render every session as training would and count, per role, the tokens that carry loss.

    Loss on a system, user or tool token is an error (exit code 1), as is an assistant turn without loss.

    Example: qaflow sft check exports/sft --model models/tiny
    """
    from transformers import AutoTokenizer

    from sft.check import check_sessions
    from sft.masking import MaskingConfig
    from sft.templates import training_template
    from sft.train import load_rows

    try:
        rows = load_rows(dataset)
    except FileNotFoundError as e:
        usage_error(str(e))
    columns = list(rows.column_names)
    if "messages" not in columns:
        usage_error(f"{dataset}: not an SFT dataset: no `messages` column (columns: {', '.join(columns)})")
    try:
        source = model_source(model)
    except ModelPathError as e:
        usage_error(str(e))
    tokenizer = AutoTokenizer.from_pretrained(source)
    report = check_sessions(
        rows["messages"],
        rows["tools"] if "tools" in columns else [None] * len(rows),
        tokenizer,
        training_template(tokenizer, template),
        MaskingConfig(max_length=max_length),
    )
    if as_json:
        emit_json(
            {
                "roles": {k: v.model_dump() for k, v in report.roles.items()},
                "errors": report.errors,
                "dropped": report.dropped,
            }
        )
    else:
        table = Table(title=f"loss by role · {len(report.sessions)} sessions", title_justify="left")
        for col in ("role", "tokens", "tokens with loss"):
            table.add_column(col)
        for role, count in sorted(report.roles.items()):
            table.add_row(role, str(count.tokens), str(count.loss_tokens))
        console().print(table)
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
