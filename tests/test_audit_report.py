"""The audit's report: the JSON document (summary, harness holes, tasks marked `exposed_by`), the format-1 list
still read, the HTML page's order (holes, findings by code worst first, accepted last and collapsed), and a
harness-exposed task end to end: in the JSON, the HTML, `qaflow accept` and the exports' gate."""

from __future__ import annotations

import json
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from curation.export.facts import GateOptions, TaskFacts, check_task
from curation.export.guard import Rejected
from curation.stages.base import StageContext
from curation.stages.config import PipelineConfig
from curation.stages.export import final_pool
from qaflow.audit.exploits import HARNESS_PYTEST, HARNESS_USER_SITE
from qaflow.audit.report import build_report, load_report, to_json, write_html
from qaflow.cli import app
from qaflow.harden.gate import clean_reason, harness_exposure, is_clean
from qaflow.models.audit import FINDING_ORDER, AuditFinding, TaskAudit, Verdict
from qaflow.models.records import FindingCode, Severity, VersionStatus
from qaflow.pool import Pool
from tests.conftest import TASKS_REPO, require_backend


def _audit(name: str, codes: list[FindingCode], *, holes: dict | None = None, warn: bool = False) -> TaskAudit:
    severity = Severity.WARNING if warn else Severity.ERROR
    findings = [AuditFinding(code=c, severity=severity, message=f"{c.value} of {name}", replay=f"qaflow run {name}")
                for c in codes]  # fmt: skip
    verdict = Verdict.ACCEPTED if warn or not codes else Verdict.NEEDS_REPAIR
    if FindingCode.INVALID_TASK in codes:
        verdict = Verdict.INVALID
    observe = {"harness": {"system_files": [], "holes": holes}} if holes else {}
    return TaskAudit(task=name, path=f"/p/{name}", version="v" + name, verdict=verdict, findings=findings,
                     probes={"observe": observe}, backend="bwrap")  # fmt: skip


PROOF = {"proven": True, "reward": 1.0, "files": ["/root/.local/x.pth"], "replay": "qaflow run /p/ok --agent x"}


def _pool_audits() -> list[TaskAudit]:
    site = {HARNESS_USER_SITE: ["/root/.local/x.pth"]}
    proven = _audit("ok", [], holes=site)
    proven.probes["observe"]["harness"]["proofs"] = {HARNESS_USER_SITE: PROOF}
    pytest_hole = _audit("flaky", [FindingCode.FLAKY], holes={HARNESS_PYTEST: ["/conftest.py"]})
    pytest_hole.probes["observe"]["harness"]["proofs"] = {HARNESS_PYTEST: PROOF | {"proven": False, "reward": 0.0}}
    return [
        proven,
        _audit("also-ok", [], holes=site),
        _audit("linted", [FindingCode.LINT], warn=True),
        _audit("leaky", [FindingCode.LEAK, FindingCode.FALSE_PASS], holes=site),
        pytest_hole,
        _audit("tampered", [FindingCode.REWARD_TAMPER]),
        _audit("passes", [FindingCode.FALSE_PASS]),
        _audit("broken", [FindingCode.INVALID_TASK]),
    ]


def test_every_finding_code_has_a_place_in_the_severity_order():
    assert sorted(FINDING_ORDER) == sorted(FindingCode) and len(set(FINDING_ORDER)) == len(FINDING_ORDER)
    assert FINDING_ORDER[:7] == (
        FindingCode.REWARD_TAMPER,
        FindingCode.FALSE_PASS,
        FindingCode.WEAK_VERIFIER,
        FindingCode.FALSE_REJECTION,
        FindingCode.BROKEN_SOLUTION,
        FindingCode.FLAKY,
        FindingCode.LEAK,
    )


def test_the_json_document_marks_tasks_a_proven_hole_reaches():
    report = build_report(_pool_audits(), backend="auto", run_ids=["audit-1"], options={"repeats": 2}, seconds=3.5)
    data = json.loads(to_json(report))
    assert data["format"] == 2 and data["run_ids"] == ["audit-1"] and data["options"] == {"repeats": 2}
    assert data["backend"] == "bwrap"  # what `auto` chose
    summary = data["summary"]
    assert summary["tasks"] == 8
    assert summary["verdicts"] == {"accepted": 3, "needs_repair": 4, "invalid": 1}
    # tasks per code, worst first
    assert list(summary["findings"].items()) == [
        ("reward_tamper", 1), ("false_pass", 2), ("flaky", 1), ("leak", 1), ("invalid_task", 1), ("lint", 1),
    ]  # fmt: skip
    assert (summary["exposed"], summary["accepted_exposed"]) == (3, 2)
    holes = {h["name"]: h for h in data["harness_holes"]}
    site, root = holes[HARNESS_USER_SITE], holes[HARNESS_PYTEST]
    assert site["proven"] and site["tasks"] == ["also-ok", "leaky", "ok"]
    assert site["proof"] == {"task": "ok", "proven": True, "reward": 1.0, "files": ["/root/.local/x.pth"],
                             "replay": "qaflow run /p/ok --agent x"}  # fmt: skip
    assert not root["proven"] and root["tasks"] == ["flaky"]  # tried, not proven: reaches no one
    exposed = {t["task"]: t["exposed_by"] for t in data["tasks"]}
    assert exposed == {"ok": [HARNESS_USER_SITE], "also-ok": [HARNESS_USER_SITE], "leaky": [HARNESS_USER_SITE],
                       "linted": [], "flaky": [], "tampered": [], "passes": [], "broken": []}  # fmt: skip
    assert {t["task"]: t["verdict"] for t in data["tasks"]}["ok"] == "accepted"  # the verdict stays the task's own
    assert load_report(to_json(report)) == report


def test_a_format_1_list_still_loads():
    old = json.dumps([a.model_dump(mode="json") for a in _pool_audits()])
    report = load_report(old)
    assert report.run_ids == [] and report.summary.tasks == 8 and report.summary.accepted_exposed == 2
    with pytest.raises(ValueError, match="not an audit report"):
        load_report('{"tasks": 3}')


class _Outline(HTMLParser):
    """The page's sections in order (by id), with the code groups' counts and whether `<details>` are open."""

    def __init__(self) -> None:
        super().__init__()
        self.sections: list[str] = []
        self.groups: list[tuple[str, int]] = []
        self.open_details = 0
        self.scripts = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if tag == "section" and found.get("id") and not found.get("data-code"):
            self.sections.append(str(found["id"]))
        if tag == "section" and found.get("data-code"):
            self.groups.append((str(found["data-code"]), int(found["data-count"] or 0)))
        if tag == "details" and "open" in found:
            self.open_details += 1
        self.scripts += tag == "script" and "src" not in found


def test_the_html_puts_holes_then_findings_worst_first_then_accepted_collapsed(tmp_path: Path):
    page = tmp_path / "report.html"
    write_html(page, build_report(_pool_audits(), backend="bwrap", run_ids=["audit-1"]))
    text = page.read_text()
    outline = _Outline()
    outline.feed(text)
    assert outline.sections == ["harness-holes", "findings", "accepted", "details"]
    assert outline.groups == [("reward_tamper", 1), ("false_pass", 2), ("flaky", 1), ("leak", 1),
                              ("invalid_task", 1), ("lint", 1)]  # fmt: skip
    assert outline.open_details == 0 and outline.scripts == 1  # collapsed; the filter is inline, no outside file
    assert "<link" not in text and "src=" not in text
    false_pass = text[text.index('id="code-false_pass"') : text.index('id="code-flaky"')]
    assert re.findall(r"<b>(\w[\w-]*)</b>", false_pass) == ["leaky", "passes"]  # each task once, by name
    assert "replay: <code>qaflow run leaky</code>" in false_pass and "evidence" not in false_pass  # no evidence: none
    accepted = text[text.index('<section id="accepted">') : text.index('<section id="details">')]
    assert re.findall(r"<td>(\w[\w-]*) ", accepted) == ["also-ok", "ok", "linted"]  # exposed ones first
    assert accepted.count(f"exposed: {HARNESS_USER_SITE}") == 2
    holes = text[text.index('id="harness-holes"') : text.index('id="findings"')]
    assert "qaflow run /p/ok --agent x" in holes and "proven" in holes


def test_clean_means_accepted_and_no_proven_hole_unless_allowed():
    assert clean_reason(VersionStatus.ACCEPTED, []) is None
    assert "candidate, not accepted" in str(clean_reason(VersionStatus.CANDIDATE, []))
    why = clean_reason(VersionStatus.ACCEPTED, [HARNESS_USER_SITE])
    assert why is not None and HARNESS_USER_SITE in why and "--allow-harness-holes" in why
    assert clean_reason(VersionStatus.ACCEPTED, [HARNESS_USER_SITE], allow_harness_holes=True) is None
    facts = {"v": TaskFacts(task="t", source="local", status=VersionStatus.ACCEPTED, exposed_by=[HARNESS_USER_SITE])}
    with pytest.raises(Rejected, match=HARNESS_USER_SITE):
        check_task("v", facts, GateOptions())
    assert check_task("v", facts, GateOptions(allow_harness_holes=True))["task_status"] == "accepted"


@pytest.mark.bwrap
def test_a_task_a_proven_hole_reaches_is_marked_and_not_clean(tmp_path: Path):
    """On bwrap the agent can plant a `.pth` in the verifier user's site folder: proven on the accepted csv-sum."""
    require_backend("bwrap")
    pool = tmp_path / "pool"
    shutil.copytree(TASKS_REPO / "csv-sum", pool / "csv-sum")
    report, page = tmp_path / "audit.json", tmp_path / "audit.html"
    args = ["audit", str(pool), "--backend", "bwrap", "--repeats", "1", "--offline", "--network", "none"]
    out = CliRunner().invoke(app, [*args, "--max-mutants", "2", "--json", str(report), "--html", str(page)])
    assert out.exit_code == 0, out.output
    data = json.loads(report.read_text())
    (task,) = data["tasks"]
    assert (task["verdict"], task["exposed_by"]) == ("accepted", [HARNESS_USER_SITE])
    assert data["summary"]["accepted_exposed"] == 1 and len(data["run_ids"]) == 1
    (hole,) = data["harness_holes"]
    assert (
        hole["proven"]
        and hole["tasks"] == [task["task"]]
        and "--agent exploit:harness-user-site" in hole["proof"]["replay"]
    )
    assert "(1 of them accepted) are reached by a proven harness hole (harness-user-site)" in out.output
    assert f"exposed: {HARNESS_USER_SITE}" in page.read_text()

    with Pool.open(pool) as opened:
        (version,) = opened.ledger.versions()
        assert harness_exposure(opened.ledger) == {version.version: [HARNESS_USER_SITE]}
        assert not is_clean(opened.ledger, version).clean  # accepted by the audit, still not clean
        assert is_clean(opened.ledger, version, allow_harness_holes=True).clean
    refused = CliRunner().invoke(app, ["accept", str(pool / "csv-sum"), "--json"])
    assert refused.exit_code == 0, refused.output
    (decision,) = json.loads(refused.stdout)
    (harness,) = [e for e in decision["evidence"] if e["kind"] == "harness"]
    assert not harness["ok"] and harness["detail"]["exposed_by"] == [HARNESS_USER_SITE]
    allowed = CliRunner().invoke(app, ["accept", str(pool / "csv-sum"), "--allow-harness-holes", "--json"])
    (decision,) = json.loads(allowed.stdout)
    assert [e["ok"] for e in decision["evidence"] if e["kind"] == "harness"] == [True]

    # the pipeline's OUT/final (what its exports read) holds the exposed version as a candidate, unless allowed
    tasks = pl.DataFrame({"version": [version.version], "pool_path": ["csv-sum"], "source": ["local"],
                          "status": ["accepted"], "id": ["csv-sum"]})  # fmt: skip
    for allowed, expected in ((False, VersionStatus.CANDIDATE), (True, VersionStatus.ACCEPTED)):
        config = PipelineConfig(name="t", output_dir=tmp_path / "out", sources=[],
                                export={"allow_harness_holes": allowed})  # fmt: skip
        ctx = StageContext(config=config, out=tmp_path / "out", pool_dir=pool, executor=None,
                           say=lambda *_: None, stages=("export",))  # fmt: skip
        with Pool.open(final_pool(ctx, tasks), create=False) as final:
            (row,) = final.list()
            assert row.status is expected, (allowed, row)


def test_the_text_summary_lists_the_worst_first_and_the_clean_last():
    from rich.console import Console

    from qaflow.audit.report import print_summary

    console = Console(record=True, width=200, color_system=None)
    print_summary(console, build_report(_pool_audits(), backend="bwrap", run_ids=["audit-1"]))
    rows = [line.split("│")[1].strip() for line in console.export_text().splitlines() if line.count("│") >= 4]
    names = [r for r in rows if r and r != "task"]
    assert names == ["tampered", "leaky", "passes", "flaky", "broken", "also-ok", "ok", "linted"]
