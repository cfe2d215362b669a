"""`qaflow rl round CONFIG`: one collection-and-update round (see rl/round.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from qaflow.cli.output import console, emit_json, usage_error
from qaflow.errors import ConfigError


def round_cmd(
    config_file: Annotated[Path, typer.Argument(metavar="CONFIG", help="YAML RoundConfig")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the round report as JSON")] = False,
) -> None:
    """Collect rollouts with the current policy at each effort, score them with effort-ordered rewards
    (references from higher-effort successes of this round), compute group-mean advantages (no std
    division) and make one clipped policy-gradient update on every generated token; save the adapter
    and a report in OUTPUT_DIR/round-N.

    Example: qaflow rl round rl_round.yaml
    """
    from rl.round import RoundConfig, run_round

    try:
        config = RoundConfig.load(config_file)
    except ConfigError as e:
        usage_error(str(e))
    try:
        report = run_round(config)
    except ValueError as e:
        usage_error(str(e))
    if as_json:
        emit_json(report)
        return
    table = Table(title=f"round {report.round} · {report.rollouts} rollouts", title_justify="left")
    columns = ("effort", "attempts", "success_rate", "mean_thinking_tokens", "mean_reference", "mean_reward")
    for col in columns:
        table.add_column(col)
    for row in report.by_effort:
        table.add_row(
            *("—" if row[c] is None else f"{row[c]:.3g}" if isinstance(row[c], float) else str(row[c]) for c in columns)
        )
    out = console()
    out.print(table)
    u = report.update
    out.print(
        f"update: {u.steps} steps on {u.trajectories - u.skipped_zero_advantage} trajectories "
        f"({u.skipped_zero_advantage} with zero advantage skipped), {u.generated_tokens} generated tokens, "
        f"clip fraction {u.clip_fraction:.3f}, KL {u.mean_kl:.4f}"
    )
    out.print(f"checkpoint: {report.checkpoint}")
