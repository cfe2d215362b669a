"""CLI of the RL stage: `qaflow rl report|gradcheck|losscheck` (and, from its own module, `round`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

import polars as pl
import typer
from rich.markup import escape
from rich.table import Table

from qaflow.cli.options import JsonOpt
from qaflow.cli.output import console, emit_json, usage_error
from qaflow.models.frame import RolloutsError

app = typer.Typer(
    name="rl",
    help="Reinforcement learning on reasoning effort: an effort-ordered round, the effort-order report, a gradient "
    "check.",
    no_args_is_help=True,
)


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="rl")


# ---------------------------------------------------------------------------------------------------------
# Commands of this module. The `round` command lives in rl/cli_round.py and adds itself to `app`;
# nothing here imports it.
# ---------------------------------------------------------------------------------------------------------


def load_rollout_frame(source: Path) -> pl.DataFrame:
    """Rollouts of a pool folder (its ledger), else of a parquet file or folder of shards."""
    from qaflow.models.frame import read_rollouts, records_to_frame
    from qaflow.pool import DEFAULT_LEDGER, Pool

    if source.is_dir() and (source / DEFAULT_LEDGER).is_file():
        with Pool.open(source, create=False) as pool:
            return records_to_frame(pool.ledger.rollouts())
    return read_rollouts(source)


def _number(value: float | None, digits: int = 1) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


@app.command("report")
def report_cmd(
    rollouts: Annotated[
        Path, typer.Argument(metavar="ROLLOUTS", help="Parquet file, folder of shards, or pool folder (its ledger)")
    ],
    png: Annotated[Path | None, typer.Option("--png", help="Write the plot to this PNG")] = None,
    as_json: JsonOpt = None,
    on: Annotated[
        str, typer.Option("--on", help="Thinking inversions on all attempts or on successes only: all|successes")
    ] = "all",
    tolerance: Annotated[
        float, typer.Option(min=0.0, help="Relative slack: inverted when lower > higher * (1 + tolerance)")
    ] = 0.0,
    model: Annotated[str | None, typer.Option(help="Only the rollouts of this model")] = None,
    round_: Annotated[
        int | None, typer.Option("--round", min=0, help="Only the attempts of this collection round")
    ] = None,
    show_tasks: Annotated[int, typer.Option(min=0, help="Per-task inversions to list (all are in --json)")] = 30,
) -> None:
    """Effort-order report: per-effort numbers and every inversion between efforts.

    Per effort: success rate, mean thinking tokens (all attempts, successes), mean output tokens and wall
    time. An inversion is a lower effort thinking more (or succeeding more) than a higher one; all are
    listed overall and per task, with counts per effort pair.

    Example: qaflow rl report tasks_repo/.qaflow/rollouts --png effort.png --on successes

    Long on purpose: a command's option list and its one flow (inputs, report, files).
    """
    from rl.report import effort_report, plot_effort_report

    if on not in ("all", "successes"):
        usage_error(f"--on: {on!r} is not one of all, successes")
    mode: Literal["all", "successes"] = "successes" if on == "successes" else "all"
    try:
        frame = load_rollout_frame(rollouts)
    except RolloutsError as e:
        usage_error(str(e))
    except (pl.exceptions.PolarsError, OSError) as e:
        usage_error(f"{rollouts}: cannot read rollouts: {e}")
    if model is not None:
        frame = frame.filter(pl.col("model") == model)
    if round_ is not None:
        frame = frame.filter(pl.col("round") == round_)
    if frame.is_empty():
        which = " ".join(
            w for w in (f"of model {model}" if model else "", f"in round {round_}" if round_ is not None else "") if w
        )
        usage_error(f"{rollouts}: no rollouts" + (f" {which}" if which else ""))
    report = effort_report(frame, on=mode, tolerance=tolerance, round=round_)
    if png is not None:
        plot_effort_report(report, png)
    if as_json:
        emit_json(report, as_json)
        return
    out = console()
    if len(report.models) > 1:
        out.print(f"[yellow]note:[/yellow] {len(report.models)} models mixed; choose one with --model")
    if len(report.rounds) > 1:
        rounds = ", ".join(map(str, report.rounds))
        out.print(f"[yellow]note:[/yellow] rounds {rounds} counted together; choose one with --round")
    if report.errors:
        reasons = ", ".join(f"{n} {reason}" for reason, n in report.excluded.items() if n)
        out.print(f"note: {report.errors} attempts not correctly graded are left out ({reasons})")
    table = Table(title=f"by effort ({report.tasks} tasks)", title_justify="left")
    for col in (
        "effort",
        "attempts",
        "success rate",
        "thinking (all)",
        "thinking (successes)",
        "output tokens",
        "wall s",
    ):
        table.add_column(col, justify="left" if col == "effort" else "right")
    for r in report.efforts:
        table.add_row(
            r.effort,
            str(r.attempts),
            f"{r.success_rate:.1%}",
            _number(r.mean_thinking),
            _number(r.mean_thinking_successes),
            _number(r.mean_output_tokens),
            _number(r.mean_wall_s),
        )
    out.print(table)
    pairs = Table(title=f"inversions per pair (thinking on {report.on})", title_justify="left")
    for col in ("kind", "lower > higher", "overall", "tasks inverted"):
        pairs.add_column(col)
    for p in report.pairs:
        mark = "[red]INVERTED[/red]" if p.overall else "ok"
        pairs.add_row(p.kind, f"{p.lower} > {p.higher}", mark, f"{p.tasks_inverted}/{p.tasks_compared}")
    out.print(pairs)
    overall = report.overall_inversions()
    out.print(f"[bold]overall inversions:[/bold] {len(overall)}")
    for i in overall:
        out.print(f"  {i.kind}: {i.lower} {i.lower_value:.3g} > {i.higher} {i.higher_value:.3g}")
    per_task = report.task_inversions()
    out.print(f"[bold]per-task inversions:[/bold] {len(per_task)}")
    for i in per_task[:show_tasks]:
        out.print(f"  {escape(i.scope)}: {i.kind} {i.lower} {i.lower_value:.3g} > {i.higher} {i.higher_value:.3g}")
    if len(per_task) > show_tasks:
        out.print(f"  … {len(per_task) - show_tasks} more (see --json)")
    if png is not None:
        out.print(f"plot: {png}")


@app.command("gradcheck")
def gradcheck_cmd(
    model: Annotated[Path, typer.Argument(metavar="MODEL", help="Model folder (from_pretrained)")],
    a: Annotated[str, typer.Option("--a", help="Attention implementation of variant A")] = "eager",
    b: Annotated[str, typer.Option("--b", help="Attention implementation of variant B")] = "sdpa",
    dtype_a: Annotated[str, typer.Option("--dtype-a", help="float32, bfloat16 or float16")] = "float32",
    dtype_b: Annotated[str, typer.Option("--dtype-b", help="float32, bfloat16 or float16")] = "float32",
    eps_a: Annotated[float | None, typer.Option("--eps-a", help="Override rms_norm_eps of variant A")] = None,
    eps_b: Annotated[float | None, typer.Option("--eps-b", help="Override rms_norm_eps of variant B")] = None,
    liger_a: Annotated[bool, typer.Option("--liger-a", help="Liger kernels in variant A (CUDA)")] = False,
    liger_b: Annotated[bool, typer.Option("--liger-b", help="Liger kernels in variant B (CUDA)")] = False,
    fp32_head_a: Annotated[
        bool, typer.Option("--fp32-lm-head-a", help="Variant A: output projection in float32, the rest in --dtype-a")
    ] = False,
    fp32_head_b: Annotated[
        bool, typer.Option("--fp32-lm-head-b", help="Variant B: output projection in float32, the rest in --dtype-b")
    ] = False,
    threshold: Annotated[float, typer.Option(min=0.0, help="Flag groups whose relative L2 exceeds this")] = 1e-3,
    seq_len: Annotated[int, typer.Option(min=2, help="Tokens per row of the fixed batch")] = 64,
    batch_size: Annotated[int, typer.Option(min=1, help="Rows of the fixed batch")] = 2,
    device: Annotated[str, typer.Option(help="cpu, cuda, cuda:1 ...")] = "cpu",
    as_json: JsonOpt = None,
) -> None:
    """Gradient check: compare the gradients of two implementations of the same model.

    Both variants run one fixed batch; the relative L2 difference ||g_a - g_b|| / ||g_a|| is reported overall
    and per parameter group, and groups above --threshold are flagged (exit status 1).

    --fp32-lm-head-a/-b keep a variant's output projection (lm_head) in float32 while the rest runs in its dtype.

    Example: qaflow rl gradcheck runs/sft1/checkpoint-200 --a eager --b sdpa --dtype-b bfloat16 --threshold 1e-2
    """
    from pydantic import ValidationError

    from rl.gradcheck import Variant, gradcheck

    if not model.is_dir():
        usage_error(f"{model}: no such model folder")
    try:
        va = Variant(
            attn_implementation=a,
            dtype=dtype_a,
            config_overrides={} if eps_a is None else {"rms_norm_eps": eps_a},
            liger=liger_a,
            fp32_lm_head=fp32_head_a,
        )
        vb = Variant(
            attn_implementation=b,
            dtype=dtype_b,
            config_overrides={} if eps_b is None else {"rms_norm_eps": eps_b},
            liger=liger_b,
            fp32_lm_head=fp32_head_b,
        )
    except ValidationError as e:
        usage_error(str(e))
    try:
        report = gradcheck(
            model, a=va, b=vb, threshold=threshold, device=device, seq_len=seq_len, batch_size=batch_size
        )
    except (RuntimeError, ValueError, OSError) as e:
        usage_error(str(e))
    if as_json:
        emit_json(report, as_json)
    else:
        out = console()
        out.print(f"A: {escape(va.label())}  loss {report.loss_a:.6f}")
        out.print(f"B: {escape(vb.label())}  loss {report.loss_b:.6f}")
        table = Table(title=f"relative L2 of gradients, batch {report.batch_shape}", title_justify="left")
        for col in ("group", "params", "numel", "|g_a|", "|g_b|", "relative L2", ""):
            table.add_column(col, justify="left" if col in ("group", "") else "right")
        for g in report.groups:
            table.add_row(
                g.group,
                str(g.params),
                str(g.numel),
                f"{g.norm_a:.4g}",
                f"{g.norm_b:.4g}",
                f"{g.rel_l2:.3e}",
                "[red]FLAGGED[/red]" if g.flagged else "",
            )
        out.print(table)
        out.print(f"[bold]overall relative L2:[/bold] {report.overall:.3e} (threshold {threshold:g})")
    if report.flagged:
        raise typer.Exit(1)


@app.command("losscheck")
def losscheck_cmd(
    model: Annotated[Path, typer.Argument(metavar="MODEL", help="Model folder (from_pretrained)")],
    threshold: Annotated[
        float, typer.Option(min=0.0, help="Flag groups whose relative L2 against the reference exceeds this")
    ] = 1e-4,
    seq_len: Annotated[int, typer.Option(min=17, help="Tokens per row of the fixed batch")] = 64,
    batch_size: Annotated[int, typer.Option(min=1, max=2, help="Rows of the fixed batch")] = 2,
    as_json: JsonOpt = None,
) -> None:
    """Loss check: the gradients of the SFT masked loss and of the RL clipped policy-gradient loss, as training
    computes them, against reference implementations (float64, token by token) on fixed inputs.

    The relative L2 ||g_ours - g_ref|| / ||g_ref|| is reported per parameter group; groups above --threshold are
    flagged (exit status 1). `qaflow rl gradcheck` compares two implementations of the model instead.

    Example: qaflow rl losscheck runs/sft1/checkpoint-200
    """
    from rl.losscheck import losscheck

    if not model.is_dir():
        usage_error(f"{model}: no such model folder")
    try:
        report = losscheck(model, threshold=threshold, seq_len=seq_len, batch_size=batch_size)
    except (RuntimeError, ValueError, OSError) as e:
        usage_error(str(e))
    if as_json:
        emit_json(report, as_json)
    else:
        out = console()
        for check in report.checks:
            table = Table(
                title=f"{check.loss} loss: ours {check.ours:.6f}, reference {check.reference:.6f}",
                title_justify="left",
            )
            for col in ("group", "params", "|g_ref|", "|g_ours|", "relative L2", ""):
                table.add_column(col, justify="left" if col in ("group", "") else "right")
            for g in check.groups:
                table.add_row(
                    g.group,
                    str(g.params),
                    f"{g.norm_a:.4g}",
                    f"{g.norm_b:.4g}",
                    f"{g.rel_l2:.3e}",
                    "[red]FLAGGED[/red]" if g.flagged else "",
                )
            out.print(table)
            out.print(f"[bold]{check.loss} overall relative L2:[/bold] {check.overall:.3e} (threshold {threshold:g})")
    if report.flagged:
        raise typer.Exit(1)


def _register_round() -> None:
    from rl.cli_round import round_cmd

    app.command("round")(round_cmd)


_register_round()
