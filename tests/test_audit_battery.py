"""The exploit battery as registered probes (`qaflow.audit.battery`): the built-in ones in their order, the
registry's rules, and a probe of one's own planned, run and judged by a real audit."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from qaflow.audit.battery import (
    BUILT_IN,
    DataForgeProbe,
    Evidence,
    battery_probes,
    register_probe,
    unregister_probe,
)
from qaflow.audit.exploits import Exploit, Plant
from qaflow.audit.observation import Observation
from qaflow.audit.probe_run import ProbeRun
from qaflow.audit.runner import AuditConfig
from qaflow.audit.service import audit_folders
from qaflow.models.audit import AuditFinding
from qaflow.models.records import FindingCode, Severity
from qaflow.pool import Pool
from qaflow.task import Task
from tests.taskfactory import write_task


def test_the_built_in_probes_are_registered_in_the_order_their_findings_are_listed():
    names = [p.name for p in battery_probes()]
    assert names[: len(BUILT_IN)] == [
        "answer-copy",
        "decode-copy",
        "hidden-link",
        "always-equal",
        "clock",
        "data-forge",
        "trust-boundary",
        "replay",
    ]


def test_a_name_is_registered_once():
    with pytest.raises(ValueError, match="'clock' is registered already"):
        register_probe(BUILT_IN[4])
    unregister_probe("no-such-probe")  # nothing to remove: no error
    assert len(battery_probes()) >= len(BUILT_IN)


def test_nothing_is_planned_from_an_observation_that_saw_nothing(tmp_path: Path):
    task = Task.load(write_task(tmp_path))
    evidence = Evidence(task, Observation(why_not="not observed"), None, [])
    assert [e for p in battery_probes() for e in p.plan(evidence)] == []


def test_data_forge_judges_each_forgery_beside_its_own_control(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    seen: list[tuple[str, str, str]] = []

    def judge(nop, results, where):
        seen.extend((e.name, run.probe, control.probe) for e, run, control in results)
        return []

    monkeypatch.setattr("qaflow.audit.battery.judge_data_forge", judge)
    exploits = [Exploit(name=n) for n in ("a", "a-control", "b", "b-control")]
    runs = [ProbeRun(probe=f"exploit:{e.name}") for e in exploits]
    evidence = Evidence(Task.load(write_task(tmp_path)), Observation(), None, [])
    DataForgeProbe().judge(evidence, exploits, runs)
    assert seen == [("a", "exploit:a", "exploit:a-control"), ("b", "exploit:b", "exploit:b-control")]


class AnswerPlanted:
    """A probe of one's own: plants the answer the instruction asks for and reports what the verifier said."""

    name = "planted-answer"

    def plan(self, evidence: Evidence) -> list[Exploit]:
        if "/app/out.txt" not in evidence.task.instruction:
            return []
        return [Exploit(name="planted-answer", plants=[Plant(path="/app/out.txt", content="done\n", why="test")])]

    def judge(self, evidence: Evidence, exploits: Sequence[Exploit], runs: Sequence[ProbeRun]) -> list[AuditFinding]:
        (run,) = runs
        message = f"the planted answer got reward {run.reward} (nop: {[r.reward for r in evidence.nop]})"
        return [AuditFinding(code=FindingCode.LINT, severity=Severity.INFO, message=message)]


@pytest.mark.bwrap
def test_a_registered_probe_is_planned_run_and_judged_by_the_audit(tmp_path: Path):
    folder = write_task(tmp_path / "pool")
    register_probe(AnswerPlanted())
    try:
        with Pool.open(tmp_path / "pool") as pool:
            batch = audit_folders(pool, [folder], AuditConfig(backend="bwrap", max_mutants=1))
    finally:
        unregister_probe("planted-answer")
    assert "planted-answer" not in [p.name for p in battery_probes()]
    (audit,) = batch.audits
    notes = [f.message for f in audit.findings if f.message.startswith("the planted answer")]
    assert notes == ["the planted answer got reward 1.0 (nop: [0.0])"], audit.findings
    assert audit.probes["observe"]["exploits"]["planted-answer"] == {"reward": 1.0, "files": ["/app/out.txt"]}
    assert audit.verdict.value == "accepted"
