"""The LLM repair agent, the audit agent (reviewer) and `qaflow review`, offline: scripted replies go
through litellm's real mock path, probes and audits run in real bwrap sandboxes."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from qaflow.audit.runner import AuditConfig
from qaflow.cli import app
from qaflow.llm import LLM, LLMConfig, ScriptedReply, ScriptedToolCall
from qaflow.models.audit import AuditFinding, TaskAudit, Verdict
from qaflow.models.records import FindingCode, RunKind, Severity
from qaflow.models.repair import TaskOutcome, UnresolvedReason
from qaflow.pool import Pool
from qaflow.repair.agent import LLMRepairer
from qaflow.repair.base import Repairer, RepairError, Reviewer
from qaflow.repair.review import CRITERIA, review_task
from qaflow.repair.reviewer import LLMReviewer
from qaflow.repair.rounds import repair_pool
from qaflow.task import Task, tree_hash
from tests.conftest import TASKS_REPO, require_backend

pytestmark = pytest.mark.bwrap  # its tests run real bwrap sandboxes (audits, repairs, trials)

MODEL = "openai/gpt-4o-mini"
TASK = "average-ratings"
TRUNCATE = "math.floor(sum(values) / len(values) * 10) / 10"
ROUND_HALF_UP = "math.floor(sum(values) / len(values) * 10 + 0.5) / 10"
FINDING = AuditFinding(
    code=FindingCode.FALSE_REJECTION,
    message="the oracle fails: the verifier truncates averages, the instruction says round",
    evidence={"oracle_rewards": [0.0, 0.0]},
)


def llm(*replies: ScriptedReply, model: str = MODEL) -> LLM:
    """A scripted LLM whose retries do not wait."""
    return LLM(LLMConfig(model=model, script=list(replies)), sleep=lambda _s: None)


def calls(*calls: tuple[str, dict | str]) -> ScriptedReply:
    return ScriptedReply(tool_calls=[ScriptedToolCall(name=n, arguments=a) for n, a in calls])


def fix_script(*, probe: bool = True) -> list[ScriptedReply]:
    steps = [
        calls(("read_file", {"path": "tests/check.py"})),
        calls(("edit_file", {"path": "tests/check.py", "old": TRUNCATE, "new": ROUND_HALF_UP})),
    ]
    if probe:
        steps.append(calls(("run_probe", {"agent": "oracle"})))
    steps.append(calls(("finish", {"summary": "check.py now rounds half up, as the instruction says"})))
    return steps


def verdict(accept: bool) -> ScriptedReply:
    reasons = [
        {"requirement": "the verifier still checks every row", "ok": True, "explanation": "unchanged"},
        {"requirement": "no check weakened", "ok": accept, "explanation": "only the rounding changed"},
    ]
    return ScriptedReply(content=json.dumps({"accept": accept, "reasons": reasons}))


def copy_task(tmp_path: Path, name: str = TASK) -> Path:
    dest = tmp_path / "work" / name
    shutil.copytree(TASKS_REPO / name, dest)
    return dest


def tool_results(outputs: dict) -> list[str]:
    return [m["content"] for m in outputs["messages"] if m["role"] == "tool"]


def test_protocols_and_names():
    repairer, reviewer = LLMRepairer(llm()), LLMReviewer(llm(model="openai/other"))
    assert isinstance(repairer, Repairer) and repairer.name == f"llm:{MODEL}"
    assert isinstance(reviewer, Reviewer) and reviewer.name == "llm-review:openai/other"


def test_scripted_repair_fixes_false_rejection_and_keeps_transcript(tmp_path: Path):
    require_backend("bwrap")
    work = copy_task(tmp_path)
    repairer = LLMRepairer(llm(*fix_script()), backend="bwrap")
    outcome = repairer.repair(Task.load(TASKS_REPO / TASK), work, [FINDING], 1)
    assert outcome.summary.startswith("check.py now rounds") and not outcome.gave_up
    assert outcome.changed_files == ["tests/check.py"]
    assert ROUND_HALF_UP in (work / "tests/check.py").read_text()
    out = outcome.outputs
    assert out["stopped"] == "finished" and out["tool_calls"] == 4 and out["refused"] == 0
    assert out["probes"] == [{"agent": "oracle", "reward": 1.0, "exit_status": "ok"}]
    # the transcript: system + user prompt (findings with evidence rendered), then assistant/tool turns
    first_user = out["messages"][1]["content"]
    assert "false_rejection" in first_user and "oracle_rewards" in first_user and "tests/check.py" in first_user
    assert json.loads(tool_results(out)[2])["reward"] == 1.0
    from qaflow.agents.scripted import agent_by_name
    from qaflow.trial import run_trial

    assert run_trial(Task.load(work), agent_by_name("oracle"), backend="bwrap").reward == 1.0


def test_malformed_calls_are_refused_and_nothing_outside_changes(tmp_path: Path):
    original = tree_hash(TASKS_REPO / TASK)
    work = copy_task(tmp_path)
    (work / "tests" / "link").symlink_to(tmp_path)  # a symlink leading out of the copy
    script = [
        calls(("delete_everything", {})),
        calls(("read_file", "{not json")),
        calls(("write_file", {"path": "../escape.txt", "content": "x"})),
        calls(("write_file", {"path": "/etc/x", "content": "x"})),
        calls(("write_file", {"path": "tests/link/escape.txt", "content": "x"})),
        calls(("run_probe", {"agent": "root"}), ("edit_file", {"path": "tests/check.py", "old": "nope", "new": ""})),
        ScriptedReply(content="I think I am done."),  # no tool call: told to use the tools
        *fix_script(probe=False),
    ]
    repairer = LLMRepairer(llm(*script), backend="bwrap")
    outcome = repairer.repair(Task.load(TASKS_REPO / TASK), work, [FINDING], 1)
    results = tool_results(outcome.outputs)
    assert "unknown tool 'delete_everything'" in results[0]
    assert "not valid JSON" in results[1]
    assert "outside the task folder" in results[2]
    assert "not a path relative" in results[3]
    assert "outside the task folder" in results[4]
    assert "invalid arguments" in results[5] and "exactly once" in results[6]
    assert outcome.outputs["refused"] == 7 and outcome.outputs["stopped"] == "finished"
    assert not (tmp_path / "work" / "escape.txt").exists() and not (tmp_path / "escape.txt").exists()
    assert not Path("/etc/x").exists()
    assert ROUND_HALF_UP in (work / "tests/check.py").read_text()  # the model went on and fixed it
    assert tree_hash(TASKS_REPO / TASK) == original


def test_turn_limit_and_tool_budget_stop_without_giving_up(tmp_path: Path):
    work = copy_task(tmp_path)
    looping = [calls(("list_files", {})) for _ in range(5)]
    outcome = LLMRepairer(llm(*looping), max_turns=3).repair(Task.load(work), work, [FINDING], 1)
    assert outcome.outputs["stopped"] == "turn_limit" and not outcome.gave_up
    assert "tests/check.py" in tool_results(outcome.outputs)[0]
    many = calls(*[("list_files", {})] * 3)
    outcome = LLMRepairer(llm(many, many), max_tool_calls=4).repair(Task.load(work), work, [FINDING], 1)
    assert outcome.outputs["stopped"] == "tool_budget" and outcome.outputs["tool_calls"] == 4
    assert tool_results(outcome.outputs)[-1] == "not run: the tool-call budget is exhausted"


def test_rate_limit_is_retried_and_model_failure_raises(tmp_path: Path):
    work = copy_task(tmp_path)
    script = [ScriptedReply(error="rate_limit"), *fix_script(probe=False)]
    repairer = LLMRepairer(llm(*script))
    outcome = repairer.repair(Task.load(work), work, [FINDING], 1)
    assert outcome.outputs["stopped"] == "finished"
    assert repairer.llm.account.totals(MODEL).failed_calls == 1
    with pytest.raises(RepairError, match="repair model failed"):
        LLMRepairer(llm(ScriptedReply(error="bad_request"))).repair(Task.load(work), work, [FINDING], 1)
    with pytest.raises(RepairError, match=r"ran out|no scripted|exhaust"):
        LLMRepairer(llm()).repair(Task.load(work), work, [FINDING], 1)


def test_reviewer_reasks_once_on_malformed_json_and_sees_the_diff(tmp_path: Path):
    work = copy_task(tmp_path)
    check = work / "tests/check.py"
    check.write_text(check.read_text().replace(TRUNCATE, ROUND_HALF_UP))
    audit = TaskAudit(task=TASK, path=str(work), version="v", verdict=Verdict.ACCEPTED)
    reviewer = LLMReviewer(llm(ScriptedReply(content="{accept: yes"), verdict(True)))
    diff = f"-    average = {TRUNCATE}\n+    average = {ROUND_HALF_UP}\n"
    result = reviewer.review(Task.load(TASKS_REPO / TASK), Task.load(work), diff, audit)
    assert result.accept and len(result.reasons) == 2 and reviewer.llm.script_left() == 0
    assert reviewer.llm.account.totals(MODEL).calls == 2  # one re-ask
    user = reviewer.messages(Task.load(TASKS_REPO / TASK), Task.load(work), diff, audit)[1]["content"]
    assert ROUND_HALF_UP in user and TRUNCATE in user and "Verdict: accepted" in user
    # an "accept" with a failed requirement is a rejection
    overruled = LLMReviewer(
        llm(ScriptedReply(content=verdict(False).content.replace('false, "reasons', 'true, "reasons')))
    )
    result = overruled.review(Task.load(TASKS_REPO / TASK), Task.load(work), diff, audit)
    assert not result.accept and result.outputs["overruled"]
    with pytest.raises(RepairError, match="review model failed"):
        LLMReviewer(llm(*[ScriptedReply(content="nope")] * 3)).review(
            Task.load(TASKS_REPO / TASK), Task.load(work), diff, audit
        )


def _pool(tmp_path: Path) -> Path:
    root = tmp_path / "pool"
    shutil.copytree(TASKS_REPO / TASK, root / TASK)
    return root


def _repair(root: Path, accept: bool) -> tuple:
    repairer = LLMRepairer(llm(*fix_script()), backend="bwrap")
    reviewer = LLMReviewer(llm(verdict(accept), model="openai/gpt-4o"))
    with Pool.open(root) as pool:
        records = repair_pool(
            pool, repairer=repairer, reviewer=reviewer, max_rounds=1, out_dir=root / ".qaflow" / "repaired",
            audit_config=AuditConfig(backend="bwrap", repeats=2, max_mutants=4, jobs=2),
        )  # fmt: skip
    return records, repairer, reviewer


@pytest.mark.parametrize("accept", [True, False], ids=["reviewer-accepts", "reviewer-rejects"])
def test_repair_pool_with_llm_agents(tmp_path: Path, accept: bool):
    require_backend("bwrap")
    root = _pool(tmp_path)
    before = tree_hash(root / TASK)
    records, repairer, reviewer = _repair(root, accept)
    (record,) = records
    assert repairer.llm.script_left() == 0 and reviewer.llm.script_left() == 0  # the reviewer was asked
    if accept:
        assert record.outcome is TaskOutcome.ACCEPTED and record.final_path
        assert ROUND_HALF_UP in (root / record.final_path / "tests/check.py").read_text()
    else:
        assert record.outcome is TaskOutcome.UNRESOLVED
        assert record.reason is UnresolvedReason.REVIEWER_REJECTED
    assert tree_hash(root / TASK) == before


def _rubric(fail: set[str]) -> ScriptedReply:
    results = [
        {"criterion": c, "outcome": "fail" if c in fail else "pass", "explanation": f"{c} explained"} for c in CRITERIA
    ]
    return ScriptedReply(content=json.dumps({"results": results}))


def test_review_task_reasks_on_missing_criteria():
    partial = ScriptedReply(
        content=json.dumps({"results": [{"criterion": "typos", "outcome": "pass", "explanation": ""}]})
    )
    model = llm(partial, _rubric({"behavior_in_tests", "pinned_dependencies"}))
    review = review_task(Task.load(TASKS_REPO / TASK), model)
    assert [r.criterion for r in review.results] == list(CRITERIA)
    assert {f.evidence["criterion"] for f in review.findings} == {"behavior_in_tests", "pinned_dependencies"}
    assert all(f.code is FindingCode.LINT and f.severity is Severity.WARNING for f in review.findings)


def test_review_cli_prints_table_and_stores_findings_in_pool(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    root = _pool(tmp_path)
    with Pool.open(root) as pool:
        pool.scan()
    script = tmp_path / "script.json"
    script.write_text(json.dumps([_rubric({"behavior_in_tests"}).model_dump(exclude_none=True)]))
    runner = CliRunner()
    monkeypatch.delenv("QAFLOW_MODEL", raising=False)
    result = runner.invoke(app, ["review", str(root / TASK), "--model", MODEL, "--script", str(script)])
    assert result.exit_code == 0, result.output
    assert "behavior_in_tests" in result.output and "fail" in result.output and "1 lint warning" in result.output
    version = Task.load(root / TASK).version
    with Pool.open(root, create=False) as pool:
        (run,) = pool.ledger.runs(RunKind.REVIEW)
        (finding,) = pool.ledger.findings(task_version=version, run_id=run.run_id)
    assert finding.code is FindingCode.LINT and finding.evidence["criterion"] == "behavior_in_tests"
    monkeypatch.setenv("QAFLOW_MODEL", MODEL)
    result = runner.invoke(app, ["review", str(root / TASK), "--json", "--script", str(script)])
    assert result.exit_code == 0, result.output
    (review,) = json.loads(result.stdout)
    assert [f["code"] for f in review["findings"]] == ["lint"] and len(review["results"]) == len(CRITERIA)
    monkeypatch.delenv("QAFLOW_MODEL")
    result = runner.invoke(app, ["review", str(root / TASK)])
    assert result.exit_code == 2 and "--model" in result.output


@pytest.mark.skipif(not os.environ.get("QAFLOW_TEST_MODEL"), reason="set QAFLOW_TEST_MODEL to run the live model test")
def test_live_model_repairs_false_rejection(tmp_path: Path):
    require_backend("bwrap")
    work = copy_task(tmp_path)
    live = LLM(LLMConfig(model=os.environ["QAFLOW_TEST_MODEL"]))
    outcome = LLMRepairer(live, backend="bwrap").repair(Task.load(TASKS_REPO / TASK), work, [FINDING], 1)
    from qaflow.agents.scripted import agent_by_name
    from qaflow.trial import run_trial

    assert outcome.outputs["stopped"] == "finished"
    assert run_trial(Task.load(work), agent_by_name("oracle"), backend="bwrap").reward == 1.0


def test_llm_repair_that_deletes_checks_is_rejected_by_the_fresh_audit(tmp_path: Path):
    """A scripted 'fix' of a weak verifier that deletes the checks: the fresh deterministic audit finds
    that nop now passes, so the repair is not accepted even though the audit agent would accept it."""
    require_backend("bwrap")
    name = "convert-temperatures"
    root = tmp_path / "pool"
    shutil.copytree(TASKS_REPO / name, root / name)
    before = tree_hash(root / name)
    cheat = "#!/bin/bash\nmkdir -p /logs/verifier\necho 1 > /logs/verifier/reward.txt\n"
    repairer = LLMRepairer(
        llm(
            calls(("write_file", {"path": "tests/test.sh", "content": cheat})),
            calls(("finish", {"summary": "the verifier no longer rejects valid conversions"})),
        ),
        backend="bwrap",
    )
    reviewer = LLMReviewer(llm(verdict(True), model="openai/gpt-4o"))
    with Pool.open(root) as pool:
        (record,) = repair_pool(
            pool, repairer=repairer, reviewer=reviewer, max_rounds=1, out_dir=root / ".qaflow" / "repaired",
            audit_config=AuditConfig(backend="bwrap", repeats=2, max_mutants=4, jobs=2),
        )  # fmt: skip
    assert record.outcome is TaskOutcome.UNRESOLVED and record.reason is UnresolvedReason.ROUND_LIMIT
    assert "false_pass" in record.codes_after
    assert reviewer.llm.script_left() == 1, "the audit agent is only asked after a clean fresh audit"
    assert tree_hash(root / name) == before
