"""Process-chain hardening of every control of tasks_repo: valid Harbor tasks with lineage, a clean audit (oracle
passes, nop fails, every mutant fails, no reward tampering), and process records made inconsistent on purpose
get reward 0 while the original verifier still passes."""

from __future__ import annotations

import json
import shutil
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from typer.testing import CliRunner

from qaflow.agents import NopAgent, OracleAgent
from qaflow.audit.runner import AuditConfig, Auditor
from qaflow.cli import app
from qaflow.harden.errors import HardenError
from qaflow.harden.process_chain import ProcessChainConfig, process_chain
from qaflow.harden.versions import AUTHOR_PROBE, GRAPH_FILE, GRAPH_PROBE, HardenRecord
from qaflow.models.audit import TaskAudit, Verdict
from qaflow.models.records import ResultKey, RunKind, Severity, VersionStatus
from qaflow.models.trial import TrialResult
from qaflow.pool import Pool
from qaflow.sandbox.base import ExecResult, Sandbox
from qaflow.task import Task, _walk_files
from qaflow.trial import run_trial
from tests.conftest import TASKS_REPO, require_backend
from tests.taskfactory import write_task

pytestmark = pytest.mark.bwrap  # its tests run real bwrap sandboxes (audits, repairs, trials)

LABELS = json.loads((TASKS_REPO / "labels.json").read_text())
# Controls whose work is files built offline: not the apt-get one (`offline_codes`), nor the service
# one, whose state is a running process that the process record does not cover.
ELIGIBLE = sorted(
    n
    for n, label in LABELS.items()
    if not label["codes"] and "offline_codes" not in label and n != "stock-lookup-service"
)
CONTROLS = ELIGIBLE[::3]
"""Every third one (the batch job hardens every control of its own sample too): CI's time."""
CHECKS = ["folder", "plan", "plan_first", "log", "log_replay", "report", "report_state", "report_binds"]

REPORT_HASH = """
import json
p = "/app/process/report.json"
r = json.load(open(p))
f = r["files"][0]
f["sha256"] = ("0" if f["sha256"][0] != "0" else "1") + f["sha256"][1:]
json.dump(r, open(p, "w"), indent=2, sort_keys=True)
"""
GHOST_FILE = """
import json
p = "/app/process/report.json"
r = json.load(open(p))
r["files"].append({"path": "ghost.txt", "change": "created", "sha256": "0" * 64, "bytes": 0, "lines": 0})
r["counts"]["created"] += 1
json.dump(r, open(p, "w"), indent=2, sort_keys=True)
"""
UNLOGGED_FILE = """
import hashlib, json

data = b"made without a log entry\\n"
open("/app/unlogged.txt", "wb").write(data)
p = "/app/process/report.json"
r = json.load(open(p))
r["files"].append({"path": "unlogged.txt", "change": "created", "sha256": hashlib.sha256(data).hexdigest(),
                   "bytes": len(data), "lines": 1})
r["counts"]["created"] += 1
json.dump(r, open(p, "w"), indent=2, sort_keys=True)
"""
PLAN_MISSING = "import os; os.remove('/app/process/plan.md')"
VARIANTS = {
    # what the doctored record breaks -> the checks that must fail (and only those)
    "report-claims-a-wrong-hash": (REPORT_HASH, {"report_state"}),
    "report-claims-a-file-the-state-lacks": (GHOST_FILE, {"report_state"}),
    "state-file-without-a-log-entry": (UNLOGGED_FILE, {"plan_first", "log_replay"}),
    "plan-missing": (PLAN_MISSING, {"folder", "plan", "plan_first", "log", "report_state", "report_binds"}),
}


class DoctoredOracle:
    """The reference solution, then a python snippet that makes its process record inconsistent."""

    def __init__(self, name: str, script: str):
        self.name, self.script = name, script

    def run(self, task: Task, sandbox: Sandbox) -> ExecResult | None:
        done = OracleAgent().run(task, sandbox)
        assert done is not None and done.ok, done
        result = sandbox.exec(["python3", "-S", "-c", self.script], timeout=60)
        assert result.ok, result
        return result


def process_checks(result: TrialResult) -> dict[str, str]:
    out = result.verifier_exec.stdout if result.verifier_exec else ""
    start = out.index("{", out.index("== step 1"))
    report, _ = json.JSONDecoder().raw_decode(out, start)
    assert list(report["checks"]) == CHECKS
    return report["checks"]


class Hardened:
    def __init__(self, root: Path, records: dict[str, HardenRecord], audits: dict[str, TaskAudit]):
        self.root, self.records, self.audits = root, records, audits

    def task(self, name: str) -> Task:
        return Task.load(self.records[name].path)


@pytest.fixture(scope="module")
def hardened(tmp_path_factory: pytest.TempPathFactory) -> Hardened:
    """Every control process-chained once (bwrap), and the hardened versions audited once."""
    require_backend("bwrap")
    root = tmp_path_factory.mktemp("pool")
    for name in CONTROLS:
        shutil.copytree(TASKS_REPO / name, root / name)
    with Pool.open(root) as pool:
        run = pool.ledger.start_run(RunKind.HARDEN)
        config = ProcessChainConfig(backend="bwrap")
        records = {n: process_chain(pool, root / n, root / ".qaflow" / "hardened", run_id=run.run_id, config=config)
                   for n in CONTROLS}  # fmt: skip
        audit_run = pool.ledger.start_run(RunKind.AUDIT)
        auditor = Auditor(pool.ledger, audit_run.run_id, AuditConfig(backend="bwrap", repeats=1, jobs=2))
        try:
            audits = auditor.audit([Path(records[n].path) for n in CONTROLS])
        finally:
            auditor.close()
    return Hardened(root, records, {Path(a.path).name.removesuffix("@process-chain"): a for a in audits})


def test_every_control_becomes_a_valid_task_version_with_lineage(hardened: Hardened) -> None:
    with Pool.open(hardened.root, create=False) as pool:
        for name in CONTROLS:
            rec = hardened.records[name]
            folder = Path(rec.path)
            assert folder == (hardened.root / ".qaflow" / "hardened" / f"{name}@process-chain").resolve()
            task = Task.load(folder)
            assert task.version == rec.version
            for path in _walk_files(folder):
                assert path.is_file() and not path.is_symlink() and folder in path.resolve().parents
            source = hardened.root / name
            assert (folder / "tests/original_test.sh").read_bytes() == (source / "tests/test.sh").read_bytes()
            assert (folder / "solution/original_solve.sh").read_bytes() == (source / "solution/solve.sh").read_bytes()
            assert "## Process record" in task.instruction and "/app/process/plan.md" in task.instruction
            assert "/tests" not in task.instruction.split("## Process record")[1]
            version = pool.ledger.get_version(rec.version)
            parent = Task.load(hardened.root / name)
            assert version is not None and version.parent_version == parent.version
            assert version.source == "harden:process_chain" and version.name == parent.name
            author = pool.ledger.get_result(ResultKey(task_version=rec.version, probe=AUTHOR_PROBE))
            assert author is not None and author.payload["author"] == "harden:process_chain"
            assert author.payload["parents"] == [parent.version]
            metrics = pool.ledger.get_result(ResultKey(task_version=rec.version, probe=GRAPH_PROBE))
            assert metrics is not None and metrics.payload["metrics"] == rec.metrics.model_dump()
            assert (folder / GRAPH_FILE).is_file()
            m = rec.metrics
            assert (m.depth, m.n_requirements, m.n_unverified_requirements, m.n_cycles) == (5, 4, 0, 0), name
            assert m.n_cross_artifact_checks >= 5, name
            assert [h["transform"] for h in task.config.metadata["qaflow"]["harden"]] == ["process_chain"]


def test_audit_of_every_hardened_control_is_clean_and_rejects_every_mutant(hardened: Hardened) -> None:
    for name in CONTROLS:
        audit = hardened.audits[name]
        # a control may carry the warnings its label names (lint), never more and never an error
        allowed = set(LABELS[name].get("warnings", []))
        assert audit.verdict is Verdict.ACCEPTED, (name, audit.findings)
        assert {f.code.value for f in audit.findings} <= allowed, (name, audit.findings)
        assert all(f.severity is Severity.WARNING for f in audit.findings), (name, audit.findings)
        assert audit.probes["oracle"]["rewards"] == [1.0], name
        assert audit.probes["nop"]["rewards"] == [0.0], name
        assert audit.probes["tamper"]["rewards"] == [0.0], name
        mutants = audit.probes["mutant_rewards"]
        # the overfit ones are the instruction's, the edge ones the comparisons' (qaflow.audit.mutants.edge)
        derived = [m for m in mutants if not m.startswith(("overfit:", "edge:"))]
        assert len(derived) == 12 and set(mutants.values()) == {0.0}, (name, mutants)
        # mutants break the process record too, not only the task's own outputs
        assert any("process/" in m for m in mutants), name


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_inconsistent_process_records_get_reward_zero(hardened: Hardened, variant: str) -> None:
    script, failing = VARIANTS[variant]

    def trial(name: str) -> tuple[str, TrialResult]:
        return name, run_trial(hardened.task(name), DoctoredOracle(variant, script), backend="bwrap")

    with ThreadPoolExecutor(2) as pool:
        results = dict(pool.map(trial, CONTROLS))
    for name, result in results.items():
        assert result.error is None and result.reward == 0.0, (name, result.error)
        checks = process_checks(result)
        assert {c for c, outcome in checks.items() if outcome != "ok"} == failing, (name, checks)
        # the task's own outputs are right: only the process record is wrong
        assert "the original verifier: reward" in result.verifier_exec.stdout
        assert "-> full" in result.verifier_exec.stdout.split("== step 2")[1], name


def test_process_chain_on_each_backend(backend: str, tmp_path: Path) -> None:
    shutil.copytree(TASKS_REPO / "rename-photos", tmp_path / "rename-photos")
    with Pool.open(tmp_path) as pool:
        run = pool.ledger.start_run(RunKind.HARDEN)
        rec = process_chain(pool, tmp_path / "rename-photos", tmp_path / "out", run_id=run.run_id,
                            config=ProcessChainConfig(backend=backend))  # fmt: skip
    task = Task.load(rec.path)
    oracle = run_trial(task, OracleAgent(), backend=backend)
    assert oracle.reward == 1.0 and all(v == "ok" for v in process_checks(oracle).values())
    assert run_trial(task, NopAgent(), backend=backend).reward == 0.0
    doctored = run_trial(task, DoctoredOracle("hash", REPORT_HASH), backend=backend)
    assert doctored.reward == 0.0 and process_checks(doctored)["report_state"] != "ok"
    detail = rec.detail
    assert detail["observed_changes"] == sorted(
        [f"photos/2024-05-01_{i}.jpg" for i in (1, 2, 3)]
        + ["photos/2024-05-03_1.jpg", "photos/2024-05-03_2.jpg", "photos/2024-06-12_1.jpg"]
        + [f"photos/IMG_000{i}.jpg" for i in range(1, 7)]
    )


def test_refusals(tmp_path: Path) -> None:
    require_backend("bwrap")
    config = ProcessChainConfig(backend="bwrap")
    busy = write_task(tmp_path, "busy", dockerfile="FROM python:3.11-slim\nWORKDIR /app\nCOPY process /app/process\n",
                      files={"environment/process/notes.txt": "mine\n"})  # fmt: skip
    broken = write_task(tmp_path, "broken", solve_sh="#!/bin/bash\nexit 3\n")
    with Pool.open(tmp_path) as pool:
        run_id = pool.ledger.start_run(RunKind.HARDEN).run_id
        with pytest.raises(HardenError, match=r"/app/process/ is already used by the task \(process/notes.txt\)"):
            process_chain(pool, busy, tmp_path / ".qaflow" / "out", run_id=run_id, config=config)
        with pytest.raises(HardenError, match="the reference solution exited with 3"):
            process_chain(pool, broken, tmp_path / ".qaflow" / "out", run_id=run_id, config=config)
        plain = write_task(tmp_path, "plain")
        rec = process_chain(pool, plain, tmp_path / ".qaflow" / "out", run_id=run_id, config=config)
        with pytest.raises(HardenError, match="process-chained already"):
            process_chain(pool, Path(rec.path), tmp_path / ".qaflow" / "out2", run_id=run_id, config=config)
        again = process_chain(pool, plain, tmp_path / ".qaflow" / "out", run_id=run_id, config=config)
        assert again.version == rec.version and again.recorded is False and rec.recorded is True
        assert pool.ledger.get_version(rec.version).status is VersionStatus.NEW
    with pytest.raises(ValueError, match="one plain folder name"):
        ProcessChainConfig(folder="../up")


def test_cli_process_chain_json(tmp_path: Path) -> None:
    require_backend("bwrap")
    task_dir = write_task(tmp_path / "pool", "plain")
    args = ["harden", "process-chain", str(task_dir), "--backend", "bwrap", "--json", "--folder", "record"]
    out = CliRunner().invoke(app, args)
    assert out.exit_code == 0, out.output
    answer = json.loads(out.stdout)
    assert answer["failures"] == []
    [version] = answer["versions"]
    assert version["transform"] == "process_chain" and version["pool_path"] == ".qaflow/hardened/plain@process-chain"
    task = Task.load(version["path"])
    assert "/app/record/plan.md" in task.instruction
    result = run_trial(task, OracleAgent(), backend="bwrap")
    assert result.reward == 1.0
    bad = CliRunner().invoke(app, ["harden", "process-chain", str(tmp_path / "nowhere")])
    assert bad.exit_code == 2 and "not a task folder" in bad.output
    inside = str(tmp_path / "pool" / "out")
    visible = CliRunner().invoke(app, ["harden", "process-chain", str(task_dir), "--out", inside])
    assert visible.exit_code == 2 and "a pool scan would take the new versions" in visible.output
