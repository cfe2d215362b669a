"""`qaflow rl round CONFIG`: one collection-and-update round (see rl/round.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from qaflow.cli.options import JsonOpt
from qaflow.cli.output import console, emit_json, usage_error
from qaflow.errors import ConfigError, LLMError


def round_cmd(
    config_file: Annotated[Path, typer.Argument(metavar="CONFIG", help="YAML RoundConfig")],
    as_json: JsonOpt = None,
    allow_truncation: Annotated[
        bool,
        typer.Option(
            "--allow-truncation",
            help="Cut a session longer than the context after its last assistant turn that fits (default: left out)",
        ),
    ] = False,
) -> None:
    """Collect rollouts with the current policy at each effort (sampled, a seed per attempt, each effort's
    thinking budget; only tasks whose current version is accepted unless `statuses` says otherwise), keep the
    correctly graded attempts (model errors, infrastructure errors and attempts without a verifier result are
    counted and left out), score them with effort-ordered rewards (references from higher-effort successes
    of this round), compute group-mean advantages (no std division) and make one clipped policy-gradient
    update on every generated token; save the adapter and a report in OUTPUT_DIR/round-N.

    Each effort is rendered into the prompt (the chat template's own switch, else the line "Reasoning effort:
    <effort>."), in collection and update alike. A session longer than the model's context is left out and
    counted (--allow-truncation cuts it at a turn boundary instead). A round where no group has reward
    variance makes no update and writes no adapter; give its folder as the next round's `adapter` and that
    round continues from the last real adapter.

    Example: qaflow rl round rl_round.yaml
    """
    from rl.round import RoundConfig, run_round

    try:
        config = RoundConfig.load(config_file)
    except ConfigError as e:
        usage_error(str(e))
    if allow_truncation:
        config = config.model_copy(update={"update": config.update.model_copy(update={"allow_truncation": True})})
    try:
        report = run_round(config)
    except (ValueError, LLMError) as e:
        usage_error(str(e))
    if as_json:
        emit_json(report, as_json)
        return
    table = Table(
        title=f"round {report.round} · {report.rollouts} graded of {report.collected} rollouts", title_justify="left"
    )
    columns = (
        "effort",
        "attempts",
        "excluded",
        "success_rate",
        "mean_thinking_tokens",
        "mean_reference",
        "mean_reward",
        "mean_abs_advantage",
        "truncated",
        "dropped",
    )
    for col in columns:
        table.add_column(col)
    for row in report.by_effort:
        table.add_row(
            *("—" if row[c] is None else f"{row[c]:.3g}" if isinstance(row[c], float) else str(row[c]) for c in columns)
        )
    out = console()
    out.print(f"started from: {report.start_note}")
    out.print(table)
    for row in report.by_effort:
        out.print(f"conditioning {row['effort']}: {json.dumps(row['conditioning'])}")
    left = ", ".join(f"{n} {reason}" for reason, n in report.excluded.items() if n)
    out.print(f"left out (not correctly graded): {left or 'none'}")
    if report.hacked:
        out.print(f"reward hacks scored 0 (a trust edge of the verifier changed): {report.hacked}")
    if report.timed_out_passed:
        out.print(f"timed out, then passed by the verifier, scored 0 (a limit was hit): {report.timed_out_passed}")
    u = report.update
    out.print(
        f"context: {u.context_length or 'unlimited'} tokens; {len(u.dropped)} sessions left out, "
        f"{len(u.truncated)} truncated at a turn boundary"
    )
    if not report.updated:
        out.print(f"[yellow]no update:[/yellow] {escape(report.reason or '')}; no adapter written")
        out.print(
            f"the next round (adapter: {report.round_dir}) continues from {report.next_adapter or 'the base model'}"
        )
        return
    out.print(
        f"update: {u.steps} steps on {u.trajectories - u.skipped_zero_advantage} trajectories "
        f"({u.skipped_zero_advantage} with zero advantage skipped), {u.generated_tokens} generated tokens, "
        f"clip fraction {u.clip_fraction:.3f}, KL {u.mean_kl:.4f}"
    )
    ratio = "n/a" if u.ratio_mean is None else f"mean {u.ratio_mean:.4f}, max {u.ratio_max:.4f}"
    out.print(
        f"tokens: {u.sampled_turns} turns trained as sampled ({u.cut_turns} cut by the length limit), "
        f"{u.retokenized_turns} re-rendered; trainer/sampler ratio {ratio}"
    )
    for reason, n in report.retokenized.items():
        out.print(f"[yellow]re-rendered:[/yellow] {n} rollouts: {escape(reason)}")
    out.print(f"checkpoint: {report.checkpoint}")
