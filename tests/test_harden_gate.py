"""The acceptance gate and attempt imports: evidence read from the ledger, decisions and statuses, the CLI."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from qaflow.cli import app
from qaflow.harden.errors import HardenError
from qaflow.harden.gate import (
    DECISION_PROBE,
    Band,
    EvidenceKind,
    GateConfig,
    GateDecision,
    attempt_outcomes,
    decide,
    evaluate,
)
from qaflow.harden.versions import AUTHOR_PROBE
from qaflow.importers.attempts import import_attempts, read_attempts
from qaflow.ledger import Ledger, StatusWriter
from qaflow.models.records import (
    Finding,
    FindingCode,
    Result,
    ResultKey,
    RunKind,
    Severity,
    TaskVersion,
    VersionStatus,
    utcnow,
)
from qaflow.models.rollout import RolloutRecord
from qaflow.models.trial import ExitStatus
from qaflow.pool import Pool
from qaflow.task import Task
from tests.conftest import require_backend
from tests.taskfactory import write_task


class World:
    """A pool with one original task and one derived version written by `author`."""

    def __init__(self, root: Path, author: str = "harden:process_chain", source: str = "harden:process_chain"):
        self.pool = Pool.open(root)
        self.ledger: Ledger = self.pool.ledger
        self.pool.scan()
        original = self.ledger.versions()[0]
        self.run = self.ledger.start_run(RunKind.HARDEN).run_id
        self.version = TaskVersion(
            version="d" * 64, name=original.name, source=source, path="derived", parent_version=original.version,
            status=VersionStatus.NEW, created_at=utcnow(),
        )  # fmt: skip
        self.ledger.add_version(self.version)
        if source.startswith("harden:"):
            self.put(AUTHOR_PROBE, 0, payload={"author": author})

    def put(self, probe: str, attempt: int = 0, *, reward: float | None = None, run: str | None = None,
            payload: dict | None = None, status: ExitStatus = ExitStatus.OK) -> None:  # fmt: skip
        self.ledger.put_result(
            Result(task_version=self.version.version, probe=probe, attempt=attempt, run_id=run or self.run,
                   backend="bwrap", status=status, reward=reward, payload=payload or {}),
            force=True,
        )  # fmt: skip

    def audit(self, *, mutants: int = 2, oracle_full: bool = True, finding: FindingCode | None = None) -> str:
        run = self.ledger.start_run(RunKind.AUDIT).run_id
        self.put("nop", reward=0.0, run=run, payload={"full": False})
        for i in range(2):
            self.put("oracle", i, reward=1.0 if oracle_full else 0.0, run=run, payload={"full": oracle_full})
        self.put("tamper", reward=0.0, run=run)
        for i in range(mutants):
            self.put(f"mutant:empty:{i}", reward=0.0, run=run)
        if finding is not None:
            self.ledger.add_finding(Finding(task_version=self.version.version, run_id=run, code=finding,
                                            severity=Severity.ERROR, message="seen"))  # fmt: skip
        return run

    def attempts(self, solver: str, outcomes: list[bool]) -> None:
        for i, passed in enumerate(outcomes):
            self.put(f"attempt:{solver}", i, reward=float(passed), payload={"passed": passed})

    def rollouts(self, model: str, outcomes: list[bool], status: ExitStatus = ExitStatus.OK) -> None:
        for i, passed in enumerate(outcomes):
            self.ledger.put_rollout(
                RolloutRecord(task=self.version.name, task_version=self.version.version, model=model, attempt=i,
                              reward=float(passed), full_reward=passed, exit_status=status)
            )  # fmt: skip

    def decide(self, config: GateConfig | None = None) -> GateDecision:
        current = self.ledger.get_version(self.version.version)
        assert current is not None
        return decide(self.ledger, current, run_id=self.run, config=config)

    def status(self) -> VersionStatus:
        current = self.ledger.get_version(self.version.version)
        assert current is not None
        return current.status


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    write_task(tmp_path, "plain")
    w = World(tmp_path)
    yield w
    w.pool.close()


def by_kind(decision: GateDecision) -> dict[EvidenceKind, tuple[bool, str]]:
    return {e.kind: (e.ok, e.summary) for e in decision.evidence}


def test_no_evidence_is_a_candidate_and_says_what_is_missing(world: World) -> None:
    decision = world.decide()
    assert not decision.accepted and decision.status is VersionStatus.CANDIDATE
    evidence = by_kind(decision)
    assert evidence[EvidenceKind.AUDIT] == (False, "no audit of this version (run `qaflow audit`)")
    assert evidence[EvidenceKind.ORACLE] == (False, "the reference solution was never run")
    assert evidence[EvidenceKind.ATTEMPTS][0] is False
    assert evidence[EvidenceKind.ATTEMPTS][1].startswith("0 attempts by other solvers, 1 needed")
    assert world.status() is VersionStatus.CANDIDATE
    [log] = [c for c in world.ledger.status_log(world.version.version) if c.new_status is VersionStatus.CANDIDATE]
    assert log.reason.startswith("gate: missing: audit: no audit") and "oracle:" in log.reason
    stored = [r for r in world.ledger.results(task_version=world.version.version) if r.probe == DECISION_PROBE]
    assert [r.attempt for r in stored] == [0] and stored[0].payload["accepted"] is False


def test_all_evidence_accepts_and_every_decision_is_kept(world: World) -> None:
    world.audit(mutants=3)
    world.attempts("model-a", [True, False])
    world.attempts("model-b", [False])
    decision = world.decide()
    assert decision.accepted and decision.status is VersionStatus.ACCEPTED
    evidence = by_kind(decision)
    assert evidence[EvidenceKind.AUDIT][1].endswith("(3 mutants rejected)")
    assert evidence[EvidenceKind.ORACLE] == (True, "the reference solution passed 2 of 2 runs")
    assert evidence[EvidenceKind.ATTEMPTS] == (True, "1/3 attempts by model-a, model-b passed (rate 0.33 in (0, 1))")
    assert world.status() is VersionStatus.ACCEPTED
    world.decide(GateConfig(band=Band(low=0.5, high=1.0)))
    assert world.status() is VersionStatus.CANDIDATE
    decisions = [r for r in world.ledger.results(task_version=world.version.version) if r.probe == DECISION_PROBE]
    assert [(r.attempt, r.payload["accepted"]) for r in decisions] == [(0, True), (1, False)]


def test_band_bounds(world: World) -> None:
    world.audit()
    world.attempts("model-a", [True, True])
    assert by_kind(world.decide())[EvidenceKind.ATTEMPTS] == (
        False, "2/2 attempts by model-a passed (rate 1.00, outside the band (0, 1))",
    )  # fmt: skip
    assert world.decide(GateConfig(band=Band(inclusive=True))).accepted
    assert not world.decide(GateConfig(band=Band(inclusive=True), min_attempts=3)).accepted
    assert Band.parse("0.2,0.8").contains(0.5) and not Band.parse("0.2,0.8").contains(0.8)
    assert Band.parse("0.2,0.8", inclusive=True).contains(0.8)
    for bad in ("0.5", "0.9,0.1", "0.5,0.5"):
        with pytest.raises(ValueError):
            Band.parse(bad)


def test_the_authors_own_attempts_do_not_count(tmp_path: Path) -> None:
    write_task(tmp_path, "plain")
    world = World(tmp_path, author="llm:openai/writer")
    world.audit()
    world.rollouts("openai/writer", [True, False, False])
    world.attempts("llm:openai/writer", [True])
    evidence = by_kind(world.decide())[EvidenceKind.ATTEMPTS]
    assert evidence[0] is False
    assert "0 attempts by other solvers, 1 needed; 4 by the author llm:openai/writer do not count" in evidence[1]
    world.rollouts("openai/other", [True, False])
    world.rollouts("openai/broken", [True], status=ExitStatus.ERROR)
    decision = world.decide()
    assert decision.accepted and decision.author == "llm:openai/writer"
    attempts = next(e for e in decision.evidence if e.kind is EvidenceKind.ATTEMPTS)
    assert attempts.detail["solvers"] == ["openai/other"] and attempts.detail["author_attempts_left_out"] == 4
    world.pool.close()


def test_a_repaired_versions_author_is_its_repairer(tmp_path: Path) -> None:
    write_task(tmp_path, "plain")
    world = World(tmp_path, source="repair:llm:openai/fixer")
    world.audit()
    world.attempts("openai/fixer", [True, False])
    decision = world.decide()
    assert decision.author == "llm:openai/fixer" and not decision.accepted
    world.pool.close()


def test_audit_evidence_follows_the_latest_audit(world: World) -> None:
    world.ledger.set_status(
        world.version.version, VersionStatus.NEEDS_REPAIR, by=StatusWriter.AUDIT, reason="audit: weak_verifier"
    )
    world.audit(finding=FindingCode.WEAK_VERIFIER)
    world.attempts("model-a", [True, False])
    decision = world.decide()
    assert by_kind(decision)[EvidenceKind.AUDIT] == (False, "the latest audit found weak_verifier")
    assert decision.status is VersionStatus.NEEDS_REPAIR and world.status() is VersionStatus.NEEDS_REPAIR
    world.audit()  # a later, clean audit of the same version
    assert world.decide().accepted


def test_an_audit_without_mutants_is_incomplete(world: World) -> None:
    world.audit(mutants=0, oracle_full=False)
    evidence = by_kind(evaluate(world.ledger, world.version))
    assert evidence[EvidenceKind.AUDIT] == (
        False, "the audit is incomplete: no mutants probe (mutants run only when the oracle passes)",
    )  # fmt: skip
    assert evidence[EvidenceKind.ORACLE] == (False, "the reference solution passed 0 of 2 runs")


def test_an_attempt_result_without_a_passed_field_passes_only_on_full_reward(world: World) -> None:
    for i, reward in enumerate([1.0, 0.99, 0.5, None]):
        world.put("attempt:solver-x", i, reward=reward)
    results = world.ledger.results(task_version=world.version.version)
    outcomes = attempt_outcomes(world.ledger, world.version.version, results)
    assert [passed for solver, passed, _ in outcomes if solver == "solver-x"] == [True, False, False, False]


def test_attempts_import_csv_and_jsonl(world: World, tmp_path: Path) -> None:
    csv_file = tmp_path / "attempts.csv"
    csv_file.write_text(
        "task,solver,passed,reward\n"
        f"{world.version.version[:12]},model-a,true,\n"
        f"{world.version.version[:12]},model-a,no,\n"
        f"{world.version.version[:12]},model-b,,1.0\n"
        "test/plain,model-b,,0.5\n"
    )
    report = import_attempts(world.pool, csv_file, run_id=world.run)
    assert (report.rows, report.imported, report.known) == (4, 4, 0)
    # a task name means its latest version: the derived one here
    assert report.by_version == {world.version.version: {"attempts": 4, "passed": 2}}
    again = import_attempts(world.pool, csv_file, run_id=world.run)
    assert (again.imported, again.known) == (0, 4)
    rows = {(r.probe, r.attempt): r.payload["passed"] for r in world.ledger.results(task_version=world.version.version)
            if r.probe.startswith("attempt:")}  # fmt: skip
    assert rows == {("attempt:model-a", 0): True, ("attempt:model-a", 1): False,
                    ("attempt:model-b", 0): True, ("attempt:model-b", 1): False}  # fmt: skip
    jsonl = tmp_path / "attempts.jsonl"
    jsonl.write_text(
        json.dumps({"task": world.version.version, "solver": "model-c", "passed": True, "attempt": 7}) + "\n"
    )
    assert import_attempts(world.pool, jsonl, run_id=world.run).imported == 1
    seven = world.ledger.get_result(ResultKey(task_version=world.version.version, probe="attempt:model-c", attempt=7))
    assert seven is not None and seven.reward == 1.0 and seven.payload["line"] == 1


def test_attempts_file_errors_name_the_line(world: World, tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("task,solver,passed\nplain,model-a,maybe\n")
    with pytest.raises(HardenError, match="line 2: passed"):
        read_attempts(bad)
    unknown = tmp_path / "unknown.jsonl"
    unknown.write_text(
        '{"task": "plain", "solver": "a", "passed": true}\n{"task": "nope", "solver": "a", "reward": 1}\n'
    )
    with pytest.raises(HardenError, match="line 2: no task folder, version, pool path or task name 'nope'"):
        import_attempts(world.pool, unknown, run_id=world.run)
    assert not [r for r in world.ledger.results() if r.probe.startswith("attempt:")]  # nothing half-imported
    header = tmp_path / "header.csv"
    header.write_text("name,who\nx,y\n")
    with pytest.raises(HardenError, match="needs a header"):
        read_attempts(header)


def test_cli_accept_refuses_without_evidence_then_accepts(tmp_path: Path) -> None:
    require_backend("bwrap")
    pool = tmp_path / "pool"
    task_dir = write_task(pool, "plain")
    runner = CliRunner()
    out = runner.invoke(app, ["harden", "process-chain", str(task_dir), "-b", "bwrap", "--json"])
    assert out.exit_code == 0, out.output
    hardened = json.loads(out.stdout)["versions"][0]["path"]
    out = runner.invoke(app, ["accept", hardened, "--audit", "-b", "bwrap", "--repeats", "1"])
    assert out.exit_code == 0, out.output
    assert "candidate" in out.output and "accepted" not in out.output.split("\n")[0]
    assert "attempts  missing" in out.output and "audit     present" in out.output
    assert "oracle    present" in out.output
    attempts = tmp_path / "attempts.csv"
    attempts.write_text(f"task,solver,passed\n{hardened},model-a,1\n{hardened},model-a,0\n")
    out = runner.invoke(app, ["attempts", "import", str(attempts), "--pool", str(pool), "--json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.stdout)["imported"] == 2
    out = runner.invoke(app, ["accept", hardened, "--json"])
    assert out.exit_code == 0, out.output
    [decision] = json.loads(out.stdout)
    assert decision["accepted"] is True and decision["status"] == "accepted"
    with Pool.open(pool, create=False) as opened:
        version = opened.ledger.get_version(Task.load(hardened).version)
        assert version is not None and version.status is VersionStatus.ACCEPTED
    misuse = runner.invoke(app, ["accept", hardened, "--band", "1"])
    assert misuse.exit_code == 2 and "--band" in misuse.output
