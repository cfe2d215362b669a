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
TRUSTING_TOTAL = {
    # the total step's verifier runs a checker shipped in the step's workdir, which the agent can rewrite
    "steps/total/workdir/check_total.sh": '#!/bin/bash\n[ "$(cat /app/total.txt 2>/dev/null)" = 13 ]\n',
    "steps/total/tests/test.sh": "#!/bin/bash\nsource /tests/grade.sh\nbash /app/check_total.sh && grade 1\ngrade 0\n",
}

ON_BACKEND = {"docker": ["sound", "trusting"], "bwrap": ["sound", "weak", "lax", "trusting"]}
"""What each backend audits: the weak and lax steps are judged from rewards alone, the same on both (CI's time);
the observation and its exploits, which read each backend's trace, run on both."""
BWRAP_ONLY = pytest.mark.parametrize("audited", [pytest.param("bwrap", marks=pytest.mark.bwrap)], indirect=True)


@pytest.fixture(scope="module", params=[pytest.param(b, marks=getattr(pytest.mark, b)) for b in ("docker", "bwrap")])
def audited(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, dict[str, TaskAudit]]:
    """A sound stock task, one with a weak verifier at step 2, one whose step 3 passes untouched and one whose
    step 3 verifier runs a checker the agent can rewrite, audited once."""
    require_backend(request.param)
    root = tmp_path_factory.mktemp("steps-pool")
    names = ON_BACKEND[request.param]
    write_stock_task(root, "sound")
    if "weak" in names:
        write_stock_task(root, "weak", overrides={"steps/restock/tests/test.sh": WEAK_RESTOCK_TEST})
    if "lax" in names:
        write_stock_task(root, "lax", overrides={"steps/total/tests/test.sh": NOP_PASSES_TOTAL})
    write_stock_task(root, "trusting", overrides=TRUSTING_TOTAL)
    with Pool.open(root) as pool:
        pool.scan()
        run = pool.ledger.start_run(RunKind.AUDIT)
        config = AuditConfig(backend=request.param, repeats=2, jobs=4, max_mutants=4)
        auditor = Auditor(pool.ledger, run.run_id, config)
        try:
            audits = auditor.audit([root / name for name in names])
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
        assert probes["observe"]["observed"] and probes["observe"]["oracle_full"], name  # every step observed


@BWRAP_ONLY
def test_a_weak_step_verifier_is_found_at_that_step(audited: tuple[Path, dict[str, TaskAudit]]) -> None:
    weak = audited[1]["weak"]
    assert weak.verdict is Verdict.NEEDS_REPAIR
    (finding,) = weak.findings
    assert finding.code is FindingCode.WEAK_VERIFIER and finding.evidence["step"] == "restock"
    assert finding.message.startswith("step 'restock': ") and "empty-all" in finding.evidence["passing_mutants"]


@BWRAP_ONLY
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


def test_a_step_whose_verifier_runs_what_the_agent_can_rewrite_is_exploited_at_that_step(
    audited: tuple[Path, dict[str, TaskAudit]],
) -> None:
    trusting = audited[1]["trusting"]
    assert trusting.verdict is Verdict.NEEDS_REPAIR
    errors = [f for f in trusting.findings if f.severity == "error"]
    assert {(f.code, f.evidence.get("step")) for f in errors} == {(FindingCode.REWARD_TAMPER, "total")}, errors
    (finding,) = errors
    assert finding.message.startswith("step 'total': ") and "/app/check_total.sh" in str(finding.evidence)
    seen = trusting.probes["steps"]["total"]["observe"]
    assert "/app/check_total.sh" in {a["path"] for a in seen["agent_writable_inputs"]}
    assert any(r["reward"] == 1.0 for r in seen["exploits"].values())
    # the counter step's verifier runs the agent's /app/counter.sh, its deliverable: tried, and rejected
    tried = trusting.probes["steps"]["counter"]["observe"]["exploits"]
    assert tried and all(r["reward"] == 0.0 for r in tried.values()), tried
