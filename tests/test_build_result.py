"""The build probe's typed result: what the ledger keeps, and results recorded before it was typed."""

from __future__ import annotations

import json

from qaflow.audit.probes.build import build_finding
from qaflow.audit.work_items import BuildResult, PythonCheck
from qaflow.models.records import FindingCode


def test_a_result_recorded_with_json_in_strings_reads_as_the_typed_one():
    old = {
        "status": "failed",
        "error": "no such base",
        "base_unavailable": "1",
        "stand_ins": json.dumps({"python:3.13-slim": "qaflow/base:bookworm"}),
        "python": json.dumps({"declared": "3.13", "found": "3.11"}),
    }
    typed = BuildResult(
        status="failed", error="no such base", base_unavailable=True,
        stand_ins={"python:3.13-slim": "qaflow/base:bookworm"}, python=PythonCheck(declared="3.13", found="3.11"),
    )  # fmt: skip
    assert BuildResult.model_validate(old) == typed
    assert BuildResult.model_validate(typed.payload()) == typed
    assert typed.payload()["stand_ins"] == {"python:3.13-slim": "qaflow/base:bookworm"}
    assert BuildResult().payload() == {"status": "ok"} and BuildResult().ok and not typed.ok


def test_the_build_finding_reads_the_typed_flags():
    base = build_finding(BuildResult(status="failed", error="x", base_unavailable=True), "docker", False)
    unsupported = build_finding(BuildResult(status="failed", error="ENTRYPOINT", unsupported=True), "bwrap", False)
    failed = build_finding(BuildResult(status="failed", error="exit 2", log_tail="make: *** Error 2"), "bwrap", False)
    assert (base.code, unsupported.code, failed.code) == (
        FindingCode.INFRA_ERROR, FindingCode.INFRA_ERROR, FindingCode.BUILD_FAILED
    )  # fmt: skip
    assert unsupported.evidence["unsupported"] == "ENTRYPOINT"
