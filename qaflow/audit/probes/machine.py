"""Findings that belong to the machine, not the task, rewritten as `infra_error` (what they were kept in their
evidence): a run on bwrap where changing a file's owner failed, a run on a stand-in image whose Python is not
the one the task's image names."""

from __future__ import annotations

import json
import re

from qaflow.models.audit import AuditFinding
from qaflow.models.records import FindingCode

_JUDGED_ON_THE_IMAGE = frozenset({FindingCode.FALSE_REJECTION, FindingCode.BROKEN_SOLUTION, FindingCode.FLAKY})


_OWNER_CHANGE_FAILED = re.compile(
    r"Cannot change ownership to uid \d+, gid \d+: Invalid argument"
    r"|chown: changing ownership of [^\\\n]*?: Invalid argument"
)


def owner_changes_on_bwrap(findings: list[AuditFinding]) -> None:
    """A finding judged on bwrap whose runs show a change of a file's owner failing (bwrap maps root alone; a
    tar extracting as root keeps the archive's owners) is `infra_error`: docker would run it."""
    for i, finding in enumerate(findings):
        if finding.code not in _JUDGED_ON_THE_IMAGE:
            continue
        sign = _OWNER_CHANGE_FAILED.search(json.dumps(finding.evidence))
        if sign is None:
            continue
        why = f"judged on bwrap, which maps root alone, where changing a file's owner fails ({sign.group()})"
        findings[i] = _machine_not_task(finding, f"{why}; audit it on docker", {"line": sign.group()})


def _machine_not_task(finding: AuditFinding, why: str, evidence: dict[str, object]) -> AuditFinding:
    """`finding` as the `infra_error` it is: `why` it belongs to the machine, what it was, its evidence kept."""
    return finding.model_copy(
        update={
            "code": FindingCode.INFRA_ERROR,
            "message": f"{why}: {finding.message}",
            "evidence": {**finding.evidence, **evidence, "was": finding.code.value},
        }
    )


def name_stand_ins(findings: list[AuditFinding], probes: dict[str, object]) -> None:
    """A finding that depends on the image's userland names the stand-in image it was judged on; where the
    stand-in's Python is not the version the image's name declares (`python:3.13` run on a 3.11 stand-in:
    `sum` of floats, for one, rounds otherwise), it is `infra_error`: the machine's verdict, not the task's."""
    build = probes.get("build")
    used = build.get("stand_ins") if isinstance(build, dict) else None
    if not used:
        return
    python = build.get("python") if isinstance(build, dict) else None
    other = isinstance(python, dict) and python.get("declared") != python.get("found")
    for i, finding in enumerate(findings):
        if finding.code not in _JUDGED_ON_THE_IMAGE:
            continue
        finding.evidence["stand_ins"] = used
        if other and isinstance(python, dict):
            why = (
                f"judged on a stand-in image whose Python is {python['found']}, not the {python['declared']} "
                f"the task's image names ({', '.join(f'{a} -> {b}' for a, b in used.items())}), so this "
                f"{finding.code.value} may be the stand-in's"
            )
            findings[i] = _machine_not_task(finding, why, {"python": python})
