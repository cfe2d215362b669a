"""`qaflow export sft` exports filtered rollouts by default: the method's rollout filter, not the raw attempts."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from qaflow.cli import app
from qaflow.models.frame import write_shard
from qaflow.models.rollout import SideCall
from qaflow.models.trial import ExitStatus
from tests.trajectories import make_record

runner = CliRunner()


def test_export_sft_applies_the_rollout_filter_unless_told_not_to(tmp_path: Path) -> None:
    records = [
        make_record(task="demo/long", tool_steps=5),  # 6 assistant turns, passed: kept
        make_record(task="demo/short", tool_steps=2),  # 3 turns: fewer than 5
        make_record(task="demo/slow", tool_steps=5, exit_status=ExitStatus.AGENT_TIMEOUT),
        make_record(task="demo/helper", tool_steps=5, side_calls=[SideCall(kind="subagent", turn=1, tokens=40)]),
    ]
    write_shard(records, tmp_path / "rollouts")
    out = tmp_path / "sft"
    base = ["export", "sft", str(tmp_path / "rollouts"), "--include-unaccepted", "--no-sharegpt", "--json"]

    filtered = runner.invoke(app, [*base, "--out", str(out)])
    assert filtered.exit_code == 0, filtered.output
    assert json.loads(filtered.stdout)["rows"] == 1
    card = (out / "README.md").read_text()
    for step in ("| input | 4 | 0 |", "| no_timeout | 3 | 1 |", "| no_side_calls | 2 | 1 |", "| min_turns | 1 | 1 |"):
        assert step in card

    raw = runner.invoke(app, [*base, "--out", str(tmp_path / "raw"), "--no-filter"])
    assert raw.exit_code == 0, raw.output
    assert json.loads(raw.stdout)["rows"] == 3  # the export's own gate still drops the timed-out attempt

    told = runner.invoke(app, [*base[:-1], "--out", str(tmp_path / "told")])
    assert "filtered with `qaflow filter`'s built-in rules (no --funnel): 1 of 4 rows kept" in " ".join(
        told.output.split()
    )
