"""The audit on the bundled pool, under both backends: every labelled code found, nothing else, no
finding on any control, identical verdicts under docker and bwrap, task folders untouched."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from qaflow.cli import app
from qaflow.records import FindingCode
from qaflow.task import tree_hash
from tests.conftest import TASKS_REPO, require_backend

LABELS: dict[str, dict[str, object]] = json.loads((TASKS_REPO / "labels.json").read_text())
REPEATS = "12"  # a 50% coin-flip verifier escapes 12 runs with probability 0.05%
_AUDITS: dict[str, dict[str, dict]] = {}


def audit_pool(backend: str, tmp_root: Path) -> dict[str, dict]:
    """Audit a copy of tasks_repo once per backend per session; returns audits by folder name."""
    if backend not in _AUDITS:
        pool = tmp_root / f"pool-{backend}"
        shutil.copytree(TASKS_REPO, pool, ignore=shutil.ignore_patterns(".qaflow"))
        before = {p.name: tree_hash(p) for p in pool.iterdir() if p.is_dir()}
        report = tmp_root / f"audit-{backend}.json"
        args = ["audit", str(pool), "--backend", backend, "--repeats", REPEATS, "--jobs", "2", "--json", str(report)]
        out = CliRunner().invoke(app, args)
        assert out.exit_code == 0, out.output
        assert "accepted" in out.output and "needs_repair" in out.output
        after = {p.name: tree_hash(p) for p in pool.iterdir() if p.is_dir() and p.name != ".qaflow"}
        assert after == before, "the audit modified a task folder"
        _AUDITS[backend] = {Path(a["path"]).name: a for a in json.loads(report.read_text())}
    return _AUDITS[backend]


def error_codes(audit: dict) -> set[str]:
    return {f["code"] for f in audit["findings"] if f["severity"] == "error"}


def test_labels_cover_every_code_twice_and_controls():
    counts = {code.value: 0 for code in FindingCode if code not in (FindingCode.LINT, FindingCode.AUDIT_ERROR)}
    for label in LABELS.values():
        for code in label["codes"]:  # type: ignore[attr-defined]
            counts[code] += 1
    assert all(n >= 2 for n in counts.values()), counts
    assert sum(1 for label in LABELS.values() if not label["codes"]) >= 6
    assert set(LABELS) == {p.name for p in TASKS_REPO.iterdir() if p.is_dir() and not p.name.startswith(".")}


@pytest.mark.slow
@pytest.mark.parametrize("backend_name", [pytest.param("docker", marks=pytest.mark.docker),
                                          pytest.param("bwrap", marks=pytest.mark.bwrap)])  # fmt: skip
def test_audit_finds_exactly_the_labelled_codes(backend_name: str, tmp_path_factory: pytest.TempPathFactory):
    require_backend(backend_name)
    audits = audit_pool(backend_name, tmp_path_factory.mktemp("audit"))
    assert set(audits) == set(LABELS)
    wrong = {
        name: {"expected": sorted(label["codes"]), "found": sorted(error_codes(audits[name]))}  # type: ignore[arg-type]
        for name, label in LABELS.items()
        if set(label["codes"]) != error_codes(audits[name])  # type: ignore[arg-type]
    }
    assert wrong == {}
    for name, label in LABELS.items():
        audit = audits[name]
        if not label["codes"]:
            assert audit["verdict"] == "accepted" and audit["findings"] == [], (name, audit["findings"])
        elif "invalid_task" in label["codes"]:  # type: ignore[operator]
            assert audit["verdict"] == "invalid"
        else:
            assert audit["verdict"] == "needs_repair"
        for finding in audit["findings"]:
            assert finding["message"] and isinstance(finding["evidence"], dict)


@pytest.mark.slow
@pytest.mark.docker
@pytest.mark.bwrap
def test_docker_and_bwrap_agree(tmp_path_factory: pytest.TempPathFactory):
    require_backend("docker")
    require_backend("bwrap")
    root = tmp_path_factory.mktemp("audit")
    docker, bwrap = audit_pool("docker", root), audit_pool("bwrap", root)
    verdicts = {n: (a["verdict"], sorted(error_codes(a))) for n, a in docker.items()}
    assert verdicts == {n: (a["verdict"], sorted(error_codes(a))) for n, a in bwrap.items()}
