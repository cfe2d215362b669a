"""`qaflow check`: the oracle and nop trials of every task through the audit's executor, one row per task in
folder order; a task that does not load is its own row and the rest go on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from qaflow.cli import app
from tests.conftest import require_backend
from tests.taskfactory import write_task

pytestmark = pytest.mark.bwrap

ALWAYS_FULL = "#!/bin/bash\nmkdir -p /logs/verifier\necho 1 > /logs/verifier/reward.txt\n"


def test_check_reports_each_task_in_folder_order(tmp_path: Path) -> None:
    require_backend("bwrap")
    pool = tmp_path / "pool"
    write_task(pool, "a-sound")
    write_task(pool, "b-passes-untouched", test_sh=ALWAYS_FULL)
    (write_task(pool, "c-broken") / "task.toml").write_text("[task\n")
    write_task(pool, "d-wrong-solution", solve_sh="#!/bin/bash\necho nope > /app/out.txt\n")
    out = CliRunner().invoke(app, ["check", str(pool), "--backend", "bwrap", "--jobs", "2", "--json"])
    assert out.exit_code == 0, out.output
    rows = json.loads(out.stdout)
    assert [Path(r["path"]).name for r in rows] == ["a-sound", "b-passes-untouched", "c-broken", "d-wrong-solution"]
    by_name = {Path(r["path"]).name: r for r in rows}
    assert by_name["a-sound"]["sound"] is True
    assert (by_name["a-sound"]["oracle"]["reward"], by_name["a-sound"]["nop"]["reward"]) == (1.0, 0.0)
    assert by_name["b-passes-untouched"]["sound"] is False and by_name["b-passes-untouched"]["nop"]["reward"] == 1.0
    assert "task.toml" in by_name["c-broken"]["invalid"] and "sound" not in by_name["c-broken"]
    assert by_name["d-wrong-solution"]["sound"] is False and by_name["d-wrong-solution"]["oracle"]["reward"] == 0.0
    table = CliRunner().invoke(app, ["check", str(pool), "--backend", "bwrap"])
    assert table.exit_code == 0 and "4 tasks: 1 sound, 3 suspect or invalid" in table.output


def test_check_takes_the_audits_executor_options(tmp_path: Path) -> None:
    write_task(tmp_path / "pool", "t")
    out = CliRunner().invoke(app, ["check", str(tmp_path / "pool"), "--address", "auto"])
    assert out.exit_code == 2 and "--address needs --executor ray" in out.output


def test_the_table_shows_a_failed_builds_first_line_and_the_json_its_log(tmp_path: Path) -> None:
    require_backend("bwrap")
    pool = tmp_path / "pool"
    noisy = "FROM python:3.11-slim\nWORKDIR /app\nRUN for i in 1 2 3 4 5 6; do echo build-line-$i; done; exit 3\n"
    write_task(pool, "no-build", dockerfile=noisy)
    rows = json.loads(CliRunner().invoke(app, ["check", str(pool), "--backend", "bwrap", "--json"]).stdout)
    assert "build-line-6" in rows[0]["oracle"]["error"] and rows[0]["sound"] is False
    table = CliRunner().invoke(app, ["check", str(pool), "--backend", "bwrap"])
    assert table.exit_code == 0 and "build_failed" in table.output and "build-line-6" not in table.output
    assert "1 tasks: 0 sound, 1 suspect or invalid" in table.output
