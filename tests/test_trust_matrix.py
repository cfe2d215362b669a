"""The verifier-pattern matrix (`tests.verifier_matrix`): a fixed covering sample of its cells, audited on bwrap
and (the cells only docker runs, a third of the others) on docker, must get exactly the findings its combination
implies: every trust edge present is proven, none is reported where it is absent. `bench/trust_matrix.py` runs
every cell and reports recall and false findings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from qaflow.audit.runner import AuditConfig, Auditor
from qaflow.models.records import RunKind
from qaflow.pool import Pool
from tests.conftest import require_backend
from tests.verifier_matrix import Cell, all_cells, covering_sample, runs_on, write_cell


def test_the_sample_covers_every_edge_present_and_absent() -> None:
    sample = covering_sample()
    assert len({c.name for c in all_cells()}) == len(all_cells()) >= 40
    assert set(sample) <= set(all_cells())
    for field in ("runner", "cwd", "load", "flags", "reward", "path_ahead", "shell", "user"):
        assert {getattr(c, field) for c in sample} == {getattr(c, field) for c in all_cells()}, field
    assert {bool(c.expected()) for c in sample} == {True, False}
    kinds = {kind for c in all_cells() for kind in c.edges()}
    assert kinds == {kind for c in sample for kind in c.edges()}  # every edge kind present at least once


@pytest.mark.parametrize("backend_name", [pytest.param("docker", marks=pytest.mark.docker),
                                          pytest.param("bwrap", marks=pytest.mark.bwrap)])  # fmt: skip
def test_the_covering_sample_gets_exactly_the_findings_its_cells_imply(backend_name: str, tmp_path: Path) -> None:
    require_backend(backend_name)
    cells = {c.name: c for c in ci_sample(backend_name)}
    for cell in cells.values():
        write_cell(tmp_path, cell)
    with Pool.open(tmp_path) as pool:
        pool.scan()
        run = pool.ledger.start_run(RunKind.AUDIT)
        # the trust edges only: code mutants have their own tests
        config = AuditConfig(backend=backend_name, jobs=3, repeats=2, code_mutants=False, max_mutants=4)
        auditor = Auditor(pool.ledger, run.run_id, config)
        try:
            audits = {a.task.removeprefix("test/"): a for a in auditor.audit(sorted(tmp_path.glob("*-*")))}
        finally:
            auditor.close()
    found = {name: {f.code.value for f in a.findings if f.severity.value == "error"} for name, a in audits.items()}
    assert found == {name: cell.expected() for name, cell in cells.items()}, _unexpected(audits, cells)


def ci_sample(backend: str) -> list[Cell]:
    """The covering sample on bwrap (its cells with a root agent); on docker, the cells bwrap cannot run (a
    non-root agent) and every seventh of the others (CI's time: the two backends' agreement is measured on
    the held-out set, `bench/heldout_trust.py`, and on the bundled pool's labelled audits)."""
    sample = [c for c in covering_sample() if runs_on(c, backend)]
    if backend != "docker":
        return sample
    shared = [c for c in sample if runs_on(c, "bwrap")]
    return [c for c in sample if not runs_on(c, "bwrap")] + shared[::7]


def test_the_docker_sample_keeps_both_sides_of_every_edge_it_runs_only_there() -> None:
    docker = ci_sample("docker")
    assert {c.user for c in docker} == {"root", "agent"} and {bool(c.expected()) for c in docker} == {True, False}
    assert set(covering_sample()) <= set(docker) | set(ci_sample("bwrap"))


def _unexpected(audits: dict, cells: dict) -> str:
    """Each finding a cell did not imply, with its evidence and the trials' outcomes, for a failure's message."""
    lines = []
    for name, audit in audits.items():
        for f in audit.findings:
            if f.severity.value == "error" and f.code.value not in cells[name].expected():
                lines.append(f"{name}: {f.code.value}: {f.message[:300]} {json.dumps(f.evidence, default=str)[:1500]}")
                lines.append(f"  oracle {audit.probes.get('oracle')} nop {audit.probes.get('nop')}")
    return "\n".join(lines)
