"""The audit of multi-step tasks: every step probed (nop, oracle, tamper, mutants) on real sandboxes."""

from __future__ import annotations

from pathlib import Path

import pytest

from qaflow.audit.runner import AuditConfig, Auditor
from qaflow.ledger import Ledger
from qaflow.models.audit import TaskAudit, Verdict
from qaflow.models.records import FindingCode, RunKind
from qaflow.pool import Pool
from tests.conftest import require_backend
from tests.stepfactory import WEAK_RESTOCK_TEST, write_stock_task

NOP_PASSES_TOTAL = "#!/bin/bash\nsource /tests/grade.sh\n[ -x /app/counter.sh ] && grade 1\ngrade 0\n"


@pytest.fixture(scope="module", params=[pytest.param(b, marks=getattr(pytest.mark, b)) for b in ("docker", "bwrap")])
def audited(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, dict[str, TaskAudit]]:
    """A sound stock task, one with a weak verifier at step 2 and one whose step 3 passes untouched, audited once."""
    require_backend(request.param)
    root = tmp_path_factory.mktemp("steps-pool")
    write_stock_task(root, "sound")
    write_stock_task(root, "weak", overrides={"steps/restock/tests/test.sh": WEAK_RESTOCK_TEST})
    write_stock_task(root, "lax", overrides={"steps/total/tests/test.sh": NOP_PASSES_TOTAL})
    with Pool.open(root) as pool:
        pool.scan()
        run = pool.ledger.start_run(RunKind.AUDIT)
        config = AuditConfig(backend=request.param, repeats=2, jobs=4, max_mutants=4)
        auditor = Auditor(pool.ledger, run.run_id, config)
        try:
            audits = auditor.audit([root / "sound", root / "weak", root / "lax"])
        finally:
            auditor.close()
    return root, {Path(a.path).name: a for a in audits}


def test_a_sound_multi_step_task_is_accepted_with_no_finding(audited: tuple[Path, dict[str, TaskAudit]]) -> None:
    sound = audited[1]["sound"]
    assert sound.verdict is Verdict.ACCEPTED and sound.findings == [], sound.findings
    steps = sound.probes["steps"]
    assert list(steps) == ["counter", "restock", "total"]
    for name, probes in steps.items():
        assert probes["oracle"]["rewards"] == [1.0, 1.0], name
        assert probes["nop"]["rewards"] == [0.0, 0.0], name
        assert probes["tamper"]["rewards"] == [0.0], name
        assert probes["mutant_rewards"] and set(probes["mutant_rewards"].values()) == {0.0}, name


def test_a_weak_step_verifier_is_found_at_that_step(audited: tuple[Path, dict[str, TaskAudit]]) -> None:
    weak = audited[1]["weak"]
    assert weak.verdict is Verdict.NEEDS_REPAIR
    (finding,) = weak.findings
    assert finding.code is FindingCode.WEAK_VERIFIER and finding.evidence["step"] == "restock"
    assert finding.message.startswith("step 'restock': ") and "empty-all" in finding.evidence["passing_mutants"]


def test_a_step_that_passes_untouched_is_a_false_pass_of_that_step(audited: tuple[Path, dict[str, TaskAudit]]) -> None:
    lax = audited[1]["lax"]
    codes = {(f.code, f.evidence.get("step")) for f in lax.findings}
    assert (FindingCode.FALSE_PASS, "total") in codes
    assert all(step == "total" for _, step in codes), codes


def test_every_step_probe_is_in_the_ledger_under_its_step(audited: tuple[Path, dict[str, TaskAudit]]) -> None:
    root, audits = audited
    ledger = Ledger(root / ".qaflow" / "ledger.sqlite")
    try:
        probes = {r.probe for r in ledger.results(task_version=audits["sound"].version)}
    finally:
        ledger.close()
    assert {"build", "oracle", "counter/nop", "restock/nop", "total/nop", "total/tamper"} <= probes
    assert any(p.startswith("restock/mutant:") for p in probes)
