"""Infrastructure from evidence at build time: a base image this machine lacks, a stand-in image's userland
and a backend that cannot honour the image are `infra_error` naming the cause; the task's own build defects
(a missing COPY source, a failing RUN on the image it names) stay `build_failed`."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from qaflow.audit.infra import stand_in_sign
from qaflow.audit.runner import AuditConfig, Auditor
from qaflow.models.audit import TaskAudit
from qaflow.models.records import FindingCode, RunKind
from qaflow.pool import Pool
from qaflow.sandbox.bwrap.base_image import host_release, mismatch
from qaflow.sandbox.image_names import declared_python
from tests.conftest import require_backend
from tests.taskfactory import write_task

HOST_PY = f"{sys.version_info.major}.{sys.version_info.minor}"
OTHER_PY = f"{sys.version_info.major}.{sys.version_info.minor + 2}"


@pytest.mark.parametrize(
    "log, why",
    [
        ("Step 3/4 : RUN mlr --version\n/bin/sh: 1: mlr: not found", "program"),
        ("bash: line 1: pip: command not found", "program"),
        ("ModuleNotFoundError: No module named 'numpy'", "module"),
        ("E: Unable to locate package libfoo-dev", "apt"),
        (
            'Traceback (most recent call last):\n  File "/usr/bin/add-apt-repository", line 5\n'
            "aptsources.distro.NoDistroTemplateException: Error: could not find a distribution template",
            "apt source",
        ),
        ("./tool: /lib/x86_64-linux-gnu/libc.so.6: version `GLIBC_2.38' not found", "C library"),
    ],
)
def test_a_stand_in_userland_failure_is_named(log: str, why: str) -> None:
    sign = stand_in_sign(log)
    assert sign is not None and sign.kind == "stand_in" and why in sign.why, sign


@pytest.mark.parametrize(
    "log",
    [
        "COPY failed: file not found in build context or excluded by .dockerignore: stat templates/x.txt",
        "json.decoder.JSONDecodeError: Expecting property name enclosed in double quotes: line 4 column 1",
        "AssertionError: sensors.json must hold 12 readings",
        "The command '/bin/sh -c test -f /app/data.csv' returned a non-zero code: 1",
    ],
)
def test_a_task_build_defect_is_not_blamed_on_the_stand_in(log: str) -> None:
    assert stand_in_sign(log) is None


def test_bwrap_honours_only_the_hosts_userland() -> None:
    distro, release = host_release()
    assert mismatch(f"python:{HOST_PY}-slim") is None
    assert mismatch(f"docker.io/library/python:{HOST_PY}") is None
    assert mismatch("qaflow/base:bookworm") is None
    assert mismatch(None) is None
    for name in sorted(release):
        assert mismatch(f"{distro}:{name}") is None
    declined = {
        f"python:{OTHER_PY}": f"Python {OTHER_PY}",
        "python:3": "not pinned",
        "python:latest": "not pinned",
        f"python:{HOST_PY}-alpine": "alpine",
        "node:20": "not the host's userland",
        "golang:1.22": "not the host's userland",
        "ghcr.io/acme/env:1.0": "not the host's userland",
        f"{distro}:0": "not the host's userland",
    }
    for ref, why in declined.items():
        said = mismatch(ref)
        assert said is not None and why in said and HOST_PY in said, (ref, said)


def _audit(root: Path, backend: str) -> dict[str, TaskAudit]:
    with Pool.open(root) as pool:
        pool.scan()
        run = pool.ledger.start_run(RunKind.AUDIT)
        auditor = Auditor(pool.ledger, run.run_id, AuditConfig(backend=backend, jobs=2, repeats=2))
        try:
            audits = auditor.audit(sorted(p for p in root.iterdir() if (p / "task.toml").is_file()))
        finally:
            auditor.close()
    return {a.task.removeprefix("test/"): a for a in audits}


def _codes(audit: TaskAudit) -> list[FindingCode]:
    return [f.code for f in audit.findings if f.severity.value == "error"]


@pytest.mark.docker
def test_docker_build_failures_name_their_cause(tmp_path: Path) -> None:
    require_backend("docker")
    write_task(tmp_path, "missing-base", dockerfile="FROM ghcr.io/acme/env:1.0\nWORKDIR /app\n")
    # the stand-in for python:3.11-slim (the offline base) has no pip: the stand-in's userland
    write_task(tmp_path, "stand-in-lacks-pip", dockerfile="FROM python:3.11-slim\nRUN pip --version\n")
    # look-alikes that are the task's own defects, on a stand-in and on the image the task names
    write_task(tmp_path, "missing-copy-source", dockerfile="FROM python:3.11-slim\nCOPY nothing.txt /app/\n")
    write_task(tmp_path, "failing-check", dockerfile="FROM qaflow/base:bookworm\nRUN test -f /app/data.csv\n")
    audits = _audit(tmp_path, "docker")

    missing = audits["missing-base"]
    assert _codes(missing) == [FindingCode.INFRA_ERROR]
    assert "ghcr.io/acme/env:1.0" in missing.findings[0].message and "lacks a base image" in missing.findings[0].message
    lacking = audits["stand-in-lacks-pip"]
    assert _codes(lacking) == [FindingCode.INFRA_ERROR], lacking.findings
    finding = lacking.findings[0]
    assert finding.evidence["stand_ins"] == {"python:3.11-slim": "qaflow/base:bookworm"}
    assert "pip" in finding.evidence["line"] and "stand-in" in finding.message
    for name in ("missing-copy-source", "failing-check"):
        assert _codes(audits[name]) == [FindingCode.BUILD_FAILED], (name, audits[name].findings)
    assert audits["missing-copy-source"].findings[0].evidence["stand_ins"] == {
        "python:3.11-slim": "qaflow/base:bookworm"
    }
    assert "stand_ins" not in audits["failing-check"].findings[0].evidence


@pytest.mark.bwrap
def test_bwrap_declines_an_image_it_cannot_reproduce(tmp_path: Path) -> None:
    require_backend("bwrap")
    write_task(tmp_path, "other-python", dockerfile=f"FROM python:{OTHER_PY}-slim\nWORKDIR /app\n")
    write_task(tmp_path, "host-python-failing-run", dockerfile=f"FROM python:{HOST_PY}-slim\nRUN test -f /nope\n")
    write_task(tmp_path, "host-python", dockerfile=f"FROM python:{HOST_PY}-slim\nWORKDIR /app\n")
    audits = _audit(tmp_path, "bwrap")
    other = audits["other-python"]
    assert _codes(other) == [FindingCode.INFRA_ERROR], other.findings
    assert f"Python {OTHER_PY}" in other.findings[0].message and "docker backend" in other.findings[0].message
    assert "oracle" not in other.probes  # never judged on the host's userland
    assert _codes(audits["host-python-failing-run"]) == [FindingCode.BUILD_FAILED]
    assert _codes(audits["host-python"]) == [], audits["host-python"].findings


def test_the_python_an_image_name_declares() -> None:
    assert declared_python("python:3.13-slim") == "3.13"
    assert declared_python("ghcr.io/laude-institute/t-bench/python-3-13:20250620") == "3.13"
    assert declared_python("docker.io/library/python:3.11.4-bookworm") == "3.11"
    for ref in ("python:3", "python:latest", "debian:12", "buildpack-deps:jammy", "node:20", "cpython-3.12:1"):
        assert declared_python(ref) is None, ref


NEEDS_312 = (  # sound on the Python its image names; on the 3.11 stand-in the oracle fails
    "#!/bin/bash\nmkdir -p /logs/verifier\n"
    "python3 -c 'import sys; print(int(sys.version_info >= (3, 12)))' > /logs/verifier/reward.txt\n"
)


@pytest.mark.docker
def test_an_oracle_failing_on_a_stand_in_of_another_python_is_the_machines_not_the_tasks(tmp_path: Path) -> None:
    """`python:3.13` run on the offline base (Python 3.11): a false rejection there is `infra_error` naming both
    versions; where the stand-in's Python is the one the image names, the task is judged as ever."""
    require_backend("docker")
    write_task(tmp_path, "declares-313", dockerfile="FROM python:3.13-slim\nWORKDIR /app\n", test_sh=NEEDS_312)
    write_task(tmp_path, "declares-311", dockerfile="FROM python:3.11-slim\nWORKDIR /app\n", test_sh=NEEDS_312)
    audits = _audit(tmp_path, "docker")
    other = audits["declares-313"]
    assert _codes(other) == [FindingCode.INFRA_ERROR], other.findings
    finding = other.findings[0]
    assert finding.evidence["was"] == "false_rejection" and finding.evidence["python"] == {
        "declared": "3.13",
        "found": "3.11",
    }
    assert "Python is 3.11, not the 3.13" in finding.message
    assert _codes(audits["declares-311"]) == [FindingCode.FALSE_REJECTION], audits["declares-311"].findings
