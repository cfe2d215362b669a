"""LLM expansion and LLM-proposed graphs, driven by a scripted model through litellm's mock path."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from qaflow.agents import NopAgent, OracleAgent
from qaflow.cli import app
from qaflow.errors import LLMError
from qaflow.harden.expand import Expansion, expand
from qaflow.harden.versions import AUTHOR_PROBE, PROPOSED_FILE
from qaflow.llm import LLM, LLMConfig, ScriptedReply
from qaflow.models.records import ResultKey, RunKind
from qaflow.pool import Pool
from qaflow.requirements.graph import RequirementGraph
from qaflow.sandbox.base import ExecResult, Sandbox
from qaflow.task import Task
from qaflow.trial import run_trial
from tests.conftest import require_backend
from tests.taskfactory import write_task

CHECK = """import sys
from pathlib import Path
out = Path("/app/out_upper.txt")
sys.exit(0 if out.is_file() and out.read_text() == "DONE\\n" else 1)
"""
PROPOSAL = {
    "requirements": [
        {"id": "shout", "text": "Also write the content of /app/out.txt in upper case to /app/out_upper.txt.",
         "produces": ["/app/out_upper.txt"]},
    ],
    "checks": [{"id": "shout-check", "verifies": ["shout"], "script": CHECK}],
    "solution": "tr a-z A-Z < /app/out.txt > /app/out_upper.txt",
}  # fmt: skip
UNCHECKED = {**PROPOSAL, "checks": [{"id": "other", "verifies": ["nothing"], "script": "print(1)"}]}
GRAPH = {
    "requirements": [
        {"id": "done", "text": "write done", "produces": ["out"]},
        {"id": "log", "text": "log what was done", "produces": ["log-file"]},
    ],
    "artifacts": [{"id": "out", "path": "/app/out.txt"}, {"id": "log-file", "path": "/app/done.log"}],
    "checks": [],
}


def scripted(*replies: dict) -> LLM:
    return LLM(LLMConfig(model="openai/scripted", script=[ScriptedReply(content=json.dumps(r)) for r in replies]))


class OriginalOnly:
    name = "original-only"

    def run(self, task: Task, sandbox: Sandbox) -> ExecResult | None:
        sandbox.put("/solution", task.solution_dir)
        return sandbox.exec("bash /solution/original_solve.sh", timeout=60)


def test_expansion_is_validated_applied_and_checked(tmp_path: Path) -> None:
    require_backend("bwrap")
    task_dir = write_task(tmp_path, "plain")
    llm = scripted(UNCHECKED, PROPOSAL)
    with Pool.open(tmp_path) as pool:
        run = pool.ledger.start_run(RunKind.HARDEN)
        rec = expand(pool, task_dir, tmp_path / ".qaflow" / "hardened", llm, run_id=run.run_id)
        author = pool.ledger.get_result(ResultKey(task_version=rec.version, probe=AUTHOR_PROBE))
        assert author is not None and author.payload["author"] == "llm:openai/scripted"
    assert llm.script_left() == 0  # the unchecked proposal was refused and the model asked again
    task = Task.load(rec.path)
    assert task.instruction.endswith(
        "## Additional requirements\n\n- Also write the content of /app/out.txt in upper case to /app/out_upper.txt.\n"
    )
    assert (task.tests_dir / "qaflow_expand" / "shout-check.py").read_text() == CHECK
    graph = RequirementGraph.for_task(task)
    assert graph.unverified_requirements() == []
    assert graph.checks_of("requirement:expand:shout") == ["check:expand-check:shout-check"]
    assert graph.checks_of("artifact:/app/out_upper.txt") == ["check:expand-check:shout-check"]
    assert rec.metrics.n_requirements == 1
    assert run_trial(task, OracleAgent(), backend="bwrap").reward == 1.0
    assert run_trial(task, NopAgent(), backend="bwrap").reward == 0.0
    assert run_trial(task, OriginalOnly(), backend="bwrap").reward == 0.0


def test_no_valid_proposal_is_a_model_failure(tmp_path: Path) -> None:
    task_dir = write_task(tmp_path, "plain")
    with Pool.open(tmp_path) as pool:
        run = pool.ledger.start_run(RunKind.HARDEN)
        with pytest.raises(LLMError, match=r"must verify proposed requirements \(unknown: \['nothing'\]\)"):
            expand(pool, task_dir, tmp_path / "out", scripted(UNCHECKED, UNCHECKED, UNCHECKED), run_id=run.run_id)
    assert not (tmp_path / "out").exists()


def test_expansion_schema_rules() -> None:
    assert Expansion.model_validate(PROPOSAL).requirements[0].id == "shout"
    leaky = {**PROPOSAL, "requirements": [{**PROPOSAL["requirements"][0], "text": "Run /tests/check.py first."}]}
    with pytest.raises(ValueError, match="mentions /tests"):
        Expansion.model_validate(leaky)
    with pytest.raises(ValueError, match="slug"):
        Expansion.model_validate({**PROPOSAL, "checks": [{**PROPOSAL["checks"][0], "id": "Bad Id"}]})


def test_cli_expand_and_graph_proposal(tmp_path: Path) -> None:
    task_dir = write_task(tmp_path / "pool", "plain")
    replies = tmp_path / "replies.json"
    replies.write_text(json.dumps([{"content": json.dumps(GRAPH)}]))
    out = CliRunner().invoke(
        app, ["harden", "graph", str(task_dir), "--model", "openai/scripted", "--script", str(replies), "--json"]
    )
    assert out.exit_code == 0, out.output
    answer = json.loads(out.stdout)
    # the proposal is merged with the tests' reading: the verifier reads /app/out.txt, nothing reads done.log
    assert [r["key"] for r in answer["unverified_requirements"]] == ["llm:log"]
    stored = json.loads((task_dir / PROPOSED_FILE).read_text())
    assert stored["model"] == "openai/scripted" and [r["id"] for r in stored["graph"]["requirements"]] == [
        "llm:done", "llm:log",
    ]  # fmt: skip
    assert "llm:" not in (task_dir / "task.toml").read_text()  # proposals are stored for review, never applied

    replies.write_text(json.dumps([{"content": json.dumps(PROPOSAL)}]))
    args = ["harden", "expand", str(task_dir), "--model", "openai/scripted", "--script", str(replies), "--json"]
    out = CliRunner().invoke(app, args)
    assert out.exit_code == 0, out.output
    [version] = json.loads(out.stdout)["versions"]
    assert version["author"] == "llm:openai/scripted" and version["transform"] == "expand"
    missing = CliRunner().invoke(app, ["harden", "expand", str(task_dir)], env={"QAFLOW_MODEL": ""})
    assert missing.exit_code == 2 and "needs --model" in missing.output
