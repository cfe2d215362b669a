"""Repair rounds on real sandboxes: rule repairs accepted after a fresh audit, scripted repairers and
reviewers rejected, bounded rounds, lineage and payloads in the ledger, originals untouched, resume."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from qaflow.audit.runner import AuditConfig
from qaflow.cli import app
from qaflow.ledger import Ledger
from qaflow.models.audit import AuditFinding, TaskAudit, Verdict
from qaflow.models.records import FindingCode, ResultKey, Severity, VersionStatus
from qaflow.models.repair import RepairRecord, ReviewReason, ReviewVerdict, TaskOutcome, UnresolvedReason
from qaflow.models.trial import ExitStatus
from qaflow.pool import Pool
from qaflow.repair.base import RepairError, RepairOutcome
from qaflow.repair.rounds import REPAIRS_JSON, repair_pool
from qaflow.repair.rules import RuleRepairer
from qaflow.task import Task, tree_hash
from tests.conftest import TASKS_REPO, require_backend

pytestmark = pytest.mark.bwrap  # its tests run real bwrap sandboxes (audits, repairs, trials)

REWARD_TAMPER_TASKS = ["reconcile-bank-statement", "score-quiz"]


def make_pool(tmp_path: Path, names: list[str]) -> Path:
    root = tmp_path / "pool"
    for name in names:
        shutil.copytree(TASKS_REPO / name, root / name)
    return root


def audit_config(backend: str = "bwrap") -> AuditConfig:
    return AuditConfig(backend=backend, repeats=2, max_mutants=4, jobs=2)


def run(root: Path, backend: str = "bwrap", **kwargs) -> dict[str, RepairRecord]:
    kwargs.setdefault("repairer", RuleRepairer())
    kwargs.setdefault("out_dir", root / ".qaflow" / "repaired")
    with Pool.open(root) as pool:
        records = repair_pool(pool, audit_config=audit_config(backend), **kwargs)
    return {Path(r.path).name: r for r in records}


def ledger_of(root: Path) -> Ledger:
    return Ledger(root / ".qaflow" / "ledger.sqlite")


def repair_payloads(ledger: Ledger, original: str) -> list[dict]:
    found = [r.payload for r in ledger.results() if r.probe == "repair" and r.payload["original"] == original]
    return sorted(found, key=lambda p: p["round"])


class Counting:
    """Wraps a repairer and records the rounds it was asked to do."""

    def __init__(self, inner):
        self.inner, self.name, self.calls = inner, inner.name, []

    def repair(self, task, work_dir, findings, round):
        self.calls.append((task.name, round))
        return self.inner.repair(task, work_dir, findings, round)


class DeleteChecks:
    """'Fixes' a verifier by deleting its checks, so it passes anything."""

    name = "delete-checks"

    def __init__(self, crash_at: int | None = None):
        self.calls: list[int] = []
        self.crash_at = crash_at

    def repair(self, task: Task, work_dir: Path, findings: list[AuditFinding], round: int) -> RepairOutcome:
        if round == self.crash_at:
            raise Crash
        self.calls.append(round)
        (work_dir / "tests" / "check.py").write_text(f"# the failing checks were removed (round {round})\n")
        return RepairOutcome(summary="removed the checks that failed", changed_files=["tests/check.py"])


class Crash(BaseException):
    """A kill in the middle of a repair (not an Exception: nothing may record it)."""


class Reviewer:
    def __init__(self, accept: bool):
        self.name = "accepting-reviewer" if accept else "strict-reviewer"
        self.accept = accept
        self.seen: list[tuple[str, str, Verdict]] = []

    def review(self, original: Task, repaired: Task, diff: str, audit: TaskAudit) -> ReviewVerdict:
        self.seen.append((original.version, diff, audit.verdict))
        reason = ReviewReason(
            requirement="the verifier still checks every row of unmatched.csv", ok=self.accept, explanation="ok"
        )
        return ReviewVerdict(accept=self.accept, reasons=[reason])


# bwrap only (CI's time): repair rounds are the same on every backend; docker repairs in
# tests/test_repair_exploits.py
@pytest.mark.parametrize("backend", [pytest.param("bwrap", marks=pytest.mark.bwrap)], indirect=True)
def test_rule_repairs_are_accepted_after_a_fresh_audit_with_lineage(backend: str, tmp_path: Path):
    root = make_pool(tmp_path, [*REWARD_TAMPER_TASKS, "average-ratings"])
    hashes = {p.name: tree_hash(p) for p in root.iterdir()}
    repairer = Counting(RuleRepairer())
    records = run(root, backend, repairer=repairer, max_rounds=2)
    assert set(records) == {*REWARD_TAMPER_TASKS, "average-ratings"}
    ledger = ledger_of(root)
    for name in REWARD_TAMPER_TASKS:
        record = records[name]
        assert (record.outcome, record.rounds, record.codes_before, record.codes_after) == (
            TaskOutcome.ACCEPTED, 1, ["reward_tamper"], []
        )  # fmt: skip
        final = ledger.get_version(record.final_version or "")
        assert final is not None and final.status is VersionStatus.ACCEPTED
        assert final.parent_version == record.original_version and final.source == "repair:rules"
        assert final.path == record.final_path == f".qaflow/repaired/{name}@1"
        assert Task.load(root / final.path).version == final.version
        assert ledger.get_version(record.original_version).status is VersionStatus.REPAIRED
        errors = [f for f in ledger.findings(task_version=final.version) if f.severity is Severity.ERROR]
        assert errors == []
        result = ledger.get_result(ResultKey(task_version=final.version, probe="repair", attempt=1))
        assert result is not None and result.status is ExitStatus.OK
        payload = result.payload
        assert payload["outcome"] == "accepted" and payload["round"] == 1 and payload["repairer"] == "rules"
        assert payload["from_version"] == record.original_version and payload["changed_files"] == ["tests/test.sh"]
        assert payload["diff"].startswith("--- a/tests/test.sh\n+++ b/tests/test.sh\n")
        assert "+echo 0 > /logs/verifier/reward.txt" in payload["diff"] or (
            "+echo '{\"reward\": 0}' > /logs/verifier/reward.json" in payload["diff"]
        )
        assert [f["code"] for f in payload["findings_before"] if f["severity"] == "error"] == ["reward_tamper"]
        assert not [f for f in payload["findings_after"] if f["severity"] == "error"]
        assert payload["outputs"]["rules"][0]["rule"] == "reward_on_failure"

    unfixable = records["average-ratings"]
    assert unfixable.outcome is TaskOutcome.UNRESOLVED and unfixable.reason is UnresolvedReason.GAVE_UP
    assert unfixable.rounds == 1 and unfixable.final_version is None
    assert len(repair_payloads(ledger, unfixable.original_version)) <= 2
    assert ledger.status_log(unfixable.original_version)[-1].reason.startswith("repair: gave_up:")
    note = ledger.get_result(ResultKey(task_version=unfixable.original_version, probe="unresolved", attempt=1))
    seen = [(f.code, f.message[:400], str(f.evidence.get("traceback", ""))[-1500:])
            for f in ledger.findings(task_version=unfixable.original_version)]  # fmt: skip
    assert note is not None and note.payload["reason"] == "gave_up", seen
    assert note.payload["remaining"] == ["false_rejection"], seen
    assert [r.name for r in ledger.tasks(VersionStatus.UNRESOLVED)] == ["qaflow/average-ratings"]
    assert not (root / ".qaflow" / "repaired" / "average-ratings@1").exists()
    assert {p.name: tree_hash(p) for p in root.iterdir() if p.name != ".qaflow"} == hashes

    saved = json.loads((root / ".qaflow" / "repaired" / REPAIRS_JSON).read_text())
    assert {Path(r["path"]).name: r["outcome"] for r in saved} == {
        "reconcile-bank-statement": "accepted", "score-quiz": "accepted", "average-ratings": "unresolved"
    }  # fmt: skip
    before = {r.key: r.created_at for r in ledger.results()}
    ledger.close()

    again = run(root, backend, repairer=repairer, max_rounds=2)
    assert len(repairer.calls) == 3  # nothing redone
    assert {n: (r.outcome, r.final_version, r.resumed_rounds) for n, r in again.items()} == {
        n: (r.outcome, r.final_version, 1) for n, r in records.items()
    }
    ledger = ledger_of(root)
    assert {r.key: r.created_at for r in ledger.results()} == before
    ledger.close()


def test_deleting_checks_is_rejected_by_the_fresh_audit_until_the_round_limit(tmp_path: Path):
    require_backend("bwrap")
    root = make_pool(tmp_path, ["convert-temperatures"])
    original = tree_hash(root / "convert-temperatures")
    repairer = DeleteChecks()
    record = run(root, repairer=repairer, max_rounds=2)["convert-temperatures"]
    assert (record.outcome, record.reason, record.rounds) == (TaskOutcome.UNRESOLVED, UnresolvedReason.ROUND_LIMIT, 2)
    assert repairer.calls == [1, 2]
    assert "false_pass" in record.codes_after
    ledger = ledger_of(root)
    rounds = repair_payloads(ledger, record.original_version)
    assert [p["outcome"] for p in rounds] == ["audit_failed", "audit_failed"]
    assert "false_pass" in {f["code"] for f in rounds[0]["findings_after"]}
    assert rounds[0]["from_version"] == record.original_version
    assert rounds[1]["from_version"] == rounds[0]["version"] and record.final_version == rounds[1]["version"]
    assert ledger.get_version(rounds[1]["version"]).parent_version == rounds[0]["version"]
    assert ledger.get_version(record.original_version).status is VersionStatus.UNRESOLVED
    assert "round_limit" in ledger.status_log(record.original_version)[-1].reason
    ledger.close()
    assert tree_hash(root / "convert-temperatures") == original


def test_a_reviewer_rejection_blocks_a_clean_repair_and_an_acceptance_is_recorded(tmp_path: Path):
    require_backend("bwrap")
    root = make_pool(tmp_path, ["reconcile-bank-statement"])
    strict = Reviewer(accept=False)
    record = run(root, reviewer=strict, max_rounds=1)["reconcile-bank-statement"]
    assert (record.outcome, record.reason) == (TaskOutcome.UNRESOLVED, UnresolvedReason.REVIEWER_REJECTED)
    (original, diff, verdict), = strict.seen  # fmt: skip
    assert original == record.original_version and verdict is Verdict.ACCEPTED and "+echo 0 >" in diff
    ledger = ledger_of(root)
    (payload,) = repair_payloads(ledger, record.original_version)
    assert payload["outcome"] == "review_rejected" and payload["review"]["accept"] is False
    assert payload["review"]["reviewer"] == "strict-reviewer"
    made = ledger.get_version(payload["version"])
    assert made is not None and made.status is VersionStatus.NEEDS_REPAIR
    review = [f for f in ledger.findings(task_version=made.version) if f.evidence.get("reviewer")]
    assert review and review[0].severity is Severity.ERROR and "unmatched.csv" in review[0].message
    assert record.codes_after == ["review"]
    ledger.close()

    root2 = make_pool(tmp_path / "second", ["reconcile-bank-statement"])
    accepting = Reviewer(accept=True)
    record = run(root2, reviewer=accepting, max_rounds=1)["reconcile-bank-statement"]
    assert record.outcome is TaskOutcome.ACCEPTED and len(accepting.seen) == 1
    ledger = ledger_of(root2)
    (payload,) = repair_payloads(ledger, record.original_version)
    assert payload["review"] == {
        "reviewer": "accepting-reviewer",
        "accept": True,
        "reasons": [{"requirement": "the verifier still checks every row of unmatched.csv", "ok": True,
                     "explanation": "ok"}],
        "outputs": {},
    }  # fmt: skip
    ledger.close()


SWALLOWED_UNDER_SET_E = """#!/bin/bash
set -e
mkdir -p /logs/verifier
python3 /tests/check.py || true
if [ $? -eq 0 ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
"""


def test_a_fix_that_exposes_a_new_defect_is_finished_in_the_next_round(tmp_path: Path):
    """Removing the `|| true` under `set -e` leaves no reward on failure: the fresh audit says
    reward_tamper (a code the repair caused, so handed on despite --codes) and round 2 fixes it."""
    require_backend("bwrap")
    root = make_pool(tmp_path, ["csv-sum"])
    (root / "csv-sum" / "tests" / "test.sh").write_text(SWALLOWED_UNDER_SET_E)
    codes = {FindingCode.FALSE_PASS, FindingCode.WEAK_VERIFIER}
    record = run(root, codes=codes, max_rounds=3)["csv-sum"]
    assert (record.outcome, record.rounds, record.codes_after) == (TaskOutcome.ACCEPTED, 2, [])
    ledger = ledger_of(root)
    first, second = repair_payloads(ledger, record.original_version)
    assert first["outcome"] == "audit_failed" and first["outputs"]["rules"][0]["rule"] == "swallowed_status"
    assert "reward_tamper" in {f["code"] for f in first["findings_next"]}
    assert second["outputs"]["rules"][0]["rule"] == "reward_on_failure" and second["outcome"] == "accepted"
    assert ledger.get_version(first["version"]).status is VersionStatus.REPAIRED  # superseded
    assert ledger.get_version(second["version"]).parent_version == first["version"]
    ledger.close()


def test_an_interrupted_repair_resumes_at_the_next_round(tmp_path: Path):
    require_backend("bwrap")
    root = make_pool(tmp_path, ["convert-temperatures"])
    with pytest.raises(Crash):
        run(root, repairer=DeleteChecks(crash_at=2), max_rounds=3)
    ledger = ledger_of(root)
    original = ledger.tasks()[0].version
    assert [p["round"] for p in repair_payloads(ledger, original)] == [1]
    assert ledger.get_version(original).status is VersionStatus.NEEDS_REPAIR
    ledger.close()

    repairer = DeleteChecks()
    record = run(root, repairer=repairer, max_rounds=3)["convert-temperatures"]
    assert repairer.calls == [2, 3]
    assert (record.rounds, record.resumed_rounds, record.reason) == (3, 1, UnresolvedReason.ROUND_LIMIT)


def test_a_model_failure_is_unresolved_and_a_rerun_tries_again(tmp_path: Path):
    require_backend("bwrap")

    class Failing:
        name = "flaky-model"

        def repair(self, task, work_dir, findings, round):
            raise RepairError(work_dir, "the model failed: rate limited 5 times")

    root = make_pool(tmp_path, ["reconcile-bank-statement"])
    record = run(root, repairer=Failing())["reconcile-bank-statement"]
    assert (record.outcome, record.reason, record.rounds) == (
        TaskOutcome.UNRESOLVED, UnresolvedReason.MODEL_FAILURE, 1
    )  # fmt: skip
    assert "rate limited" in record.detail
    assert not (root / ".qaflow" / "repaired" / "reconcile-bank-statement@1").exists()
    ledger = ledger_of(root)
    (result,) = [r for r in ledger.results() if r.probe == "repair"]
    assert result.status is ExitStatus.ERROR and result.task_version == record.original_version
    ledger.close()

    record = run(root)["reconcile-bank-statement"]
    assert (record.outcome, record.rounds, record.final_path) == (
        TaskOutcome.ACCEPTED, 2, ".qaflow/repaired/reconcile-bank-statement@2"
    )  # fmt: skip


def test_an_invalid_repair_fails_its_round_and_the_next_starts_from_the_last_valid_version(tmp_path: Path):
    require_backend("bwrap")

    class BreakToml:
        name = "break-toml"

        def repair(self, task, work_dir, findings, round):
            (work_dir / "task.toml").write_text("[verifier\n")
            return RepairOutcome(summary="tidied task.toml")

    root = make_pool(tmp_path, ["reconcile-bank-statement"])
    record = run(root, repairer=BreakToml(), max_rounds=2)["reconcile-bank-statement"]
    assert (record.outcome, record.reason, record.rounds) == (TaskOutcome.UNRESOLVED, UnresolvedReason.ROUND_LIMIT, 2)
    assert record.codes_after == ["reward_tamper"]
    ledger = ledger_of(root)
    rounds = repair_payloads(ledger, record.original_version)
    assert [p["outcome"] for p in rounds] == ["invalid", "invalid"]
    assert [p["from_version"] for p in rounds] == [record.original_version] * 2
    assert "invalid_task" in {f["code"] for f in rounds[1]["findings_before"]}
    broken = ledger.get_version(rounds[0]["version"])
    assert broken is not None and broken.status is VersionStatus.INVALID and "task.toml" in (broken.error or "")
    ledger.close()


def test_codes_limit_what_is_attempted(tmp_path: Path):
    require_backend("bwrap")
    root = make_pool(tmp_path, ["rotate-backups"])
    record = run(root, codes={FindingCode.REWARD_TAMPER})["rotate-backups"]
    assert record.outcome is TaskOutcome.SKIPPED and record.rounds == 0
    record = run(root, codes={FindingCode.FALSE_PASS})["rotate-backups"]
    assert record.outcome is TaskOutcome.ACCEPTED
    assert (record.codes_before, record.codes_after) == (["false_pass", "weak_verifier"], [])


def test_a_repairer_that_writes_the_original_is_caught(tmp_path: Path):
    require_backend("bwrap")
    root = make_pool(tmp_path, ["reconcile-bank-statement"])

    class Rogue:
        name = "rogue"

        def repair(self, task, work_dir, findings, round):
            (root / "reconcile-bank-statement" / "instruction.md").write_text("changed in place\n")
            (work_dir / "instruction.md").write_text("changed in place\n")
            return RepairOutcome(summary="edited the instruction")

    record = run(root, repairer=Rogue())["reconcile-bank-statement"]
    assert (record.outcome, record.reason) == (TaskOutcome.UNRESOLVED, UnresolvedReason.REPAIR_ERROR)
    assert "modified" in record.detail and "reconcile-bank-statement" in record.detail


@pytest.mark.parametrize("out", ["repaired", ".", "csv-sum/fixed"])
def test_output_folders_a_scan_would_pick_up_are_refused(tmp_path: Path, out: str):
    root = make_pool(tmp_path, ["csv-sum"])
    with pytest.raises(RepairError, match=r"output folder|hidden"):
        run(root, out_dir=root / out)


def test_repair_cli_summary_json_and_unresolved_listing(tmp_path: Path):
    require_backend("bwrap")
    root = make_pool(tmp_path, ["rotate-backups", "average-ratings", "csv-sum"])
    report = tmp_path / "repairs.json"
    args = ["repair", str(root), "--backend", "bwrap", "--repeats", "2", "--max-mutants", "4", "--json", str(report)]
    out = CliRunner().invoke(app, args)
    assert out.exit_code == 0, out.output
    assert "rotate-backups" in out.output and "unresolved (gave_up)" in out.output
    assert "1 accepted, 1 unresolved, 0 skipped" in out.output
    records = {Path(r["path"]).name: r for r in json.loads(report.read_text())}
    assert records["rotate-backups"]["outcome"] == "accepted" and "csv-sum" not in records
    listed = CliRunner().invoke(app, ["pool", "list", "--pool", str(root), "--status", "unresolved", "--json"])
    assert listed.exit_code == 0, listed.output
    assert [r["name"] for r in json.loads(listed.output)] == ["qaflow/average-ratings"]


def test_repair_cli_refuses_an_audit_model_alone_and_unknown_codes(tmp_path: Path, monkeypatch):
    monkeypatch.delenv("QAFLOW_MODEL", raising=False)
    root = make_pool(tmp_path, ["csv-sum"])
    out = CliRunner().invoke(app, ["repair", str(root), "--audit-model", "openai/gpt-4o-mini"])
    assert out.exit_code == 2 and "--audit-model needs --model" in out.output
    out = CliRunner().invoke(app, ["repair", str(root), "--codes", "reward_tamper,nonsense"])
    assert out.exit_code == 2 and "nonsense" in out.output


def test_a_repair_targets_the_latest_audit_not_advisory_findings_of_other_runs(tmp_path: Path):
    from qaflow.models.records import Finding, RunKind, TaskVersion, utcnow
    from qaflow.repair.chain import latest_findings

    ledger = Ledger(tmp_path / "ledger.sqlite")
    ledger.add_version(
        TaskVersion(version="v" * 64, name="t", source="local", path="t", status=VersionStatus.NEW, created_at=utcnow())
    )
    for kind, code, severity in [
        (RunKind.AUDIT, FindingCode.FALSE_PASS, Severity.ERROR),
        (RunKind.AUDIT, FindingCode.REWARD_TAMPER, Severity.ERROR),
        (RunKind.REVIEW, FindingCode.LINT, Severity.WARNING),
    ]:
        run = ledger.start_run(kind)
        ledger.add_finding(
            Finding(task_version="v" * 64, run_id=run.run_id, code=code, severity=severity, message=kind.value)
        )
    assert [f.code for f in latest_findings(ledger, "v" * 64)] == [FindingCode.REWARD_TAMPER]
    ledger.close()
