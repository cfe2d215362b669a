"""`qaflow audit` end to end on a small pool: the JSON contract, the HTML report, --only-new, exit codes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from qaflow.cli import app
from tests.conftest import TASKS_REPO

TASKS = ["csv-sum", "clean-phone-numbers", "menu-prices"]


def run_audit(pool: Path, backend: str, *extra: str) -> tuple[str, list[dict]]:
    report = pool.parent / "audit.json"
    args = ["audit", str(pool), "--backend", backend, "--repeats", "2", "--max-mutants", "3", "--json", str(report)]
    out = CliRunner().invoke(app, [*args, *extra])
    assert out.exit_code == 0, out.output
    return out.output, json.loads(report.read_text())["tasks"]


# bwrap only (CI's time): the CLI's report contract is the same on every backend; the labelled sample
# checks docker's audits
@pytest.mark.parametrize("backend", [pytest.param("bwrap", marks=pytest.mark.bwrap)], indirect=True)
def test_audit_cli_contract_html_and_only_new(backend: str, tmp_path: Path):
    pool = tmp_path / "pool"
    for name in TASKS:
        shutil.copytree(TASKS_REPO / name, pool / name)
    html = tmp_path / "audit.html"
    output, audits = run_audit(pool, backend, "--html", str(html))
    by_name = {Path(a["path"]).name: a for a in audits}
    assert set(by_name) == set(TASKS)
    for audit in audits:
        assert set(audit) >= {"task", "path", "version", "verdict", "findings"}
        for finding in audit["findings"]:
            assert set(finding) >= {"code", "severity", "message", "evidence"}
    assert by_name["csv-sum"]["verdict"] == "accepted" and by_name["csv-sum"]["findings"] == []
    assert by_name["menu-prices"]["verdict"] == "invalid"
    assert "instruction.md" in by_name["menu-prices"]["findings"][0]["message"]
    phone = by_name["clean-phone-numbers"]
    assert phone["verdict"] == "needs_repair"
    assert {f["code"] for f in phone["findings"]} >= {"false_pass"}
    assert "1 accepted, 1 needs_repair, 1 invalid" in output
    # output to a pipe or a file (CliRunner's is no terminal): one line per finished task, as it finishes
    lines = [ln for ln in output.splitlines() if ln.startswith("audit ") and "/3 " in ln]
    assert len(lines) == 3 and [ln.split()[1] for ln in lines] == ["1/3", "2/3", "3/3"], output
    assert any("qaflow/clean-phone-numbers: needs_repair (" in ln and "false_pass" in ln for ln in lines), lines
    assert any(ln.endswith(" s") and "qaflow/csv-sum: accepted, " in ln for ln in lines), lines
    assert "invalid menu-prices: instruction.md" in output  # why it is invalid, under the table
    page = html.read_text()
    assert page.startswith("<!doctype html>") and "qaflow/clean-phone-numbers" in page and "false_pass" in page
    (false_pass,) = [f for f in phone["findings"] if f["code"] == "false_pass"]
    assert false_pass["replay"] == f"qaflow run {pool / 'clean-phone-numbers'} --agent nop --backend {backend}"
    assert f"replay: <code>{false_pass['replay']}</code>" in page

    piped = CliRunner().invoke(app, ["audit", str(pool), "--backend", backend, "--repeats", "2", "--json", "-"])
    assert piped.exit_code == 0, piped.output

    def verdicts(report: list[dict]) -> set[tuple[str, str, str]]:
        return {(a["task"], a["verdict"], ",".join(sorted(f["code"] for f in a["findings"]))) for a in report}

    piped_tasks = json.loads(piped.stdout)["tasks"]
    assert verdicts(piped_tasks) == verdicts(audits) and "1 accepted" in piped.stderr  # JSON alone
    assert not (Path.cwd() / "-").exists()

    _, again = run_audit(pool, backend, "--only-new")
    assert again == []
    (pool / "csv-sum" / "instruction.md").write_text("Sum the north region of /app/sales.csv into /app/answer.txt.\n")
    _, changed = run_audit(pool, backend, "--only-new")
    assert [Path(a["path"]).name for a in changed] == ["csv-sum"]
    assert changed[0]["version"] != by_name["csv-sum"]["version"]


def test_audit_of_a_missing_path_is_a_usage_error(tmp_path: Path):
    out = CliRunner().invoke(app, ["audit", str(tmp_path / "nope")])
    assert out.exit_code == 2
