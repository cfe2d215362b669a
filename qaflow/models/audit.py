"""The audit's boundary types: findings with evidence, and the per-task report (docs/contracts.md, "JSON shapes")."""

from __future__ import annotations

from enum import StrEnum
from typing import Any

from pydantic import BaseModel, Field

from qaflow.models.records import FindingCode, Severity


class Verdict(StrEnum):
    ACCEPTED = "accepted"
    NEEDS_REPAIR = "needs_repair"
    INVALID = "invalid"


class AuditFinding(BaseModel):
    """One finding: what was seen (message, with how to fix it) and the evidence for it."""

    code: FindingCode
    severity: Severity = Severity.ERROR
    message: str
    evidence: dict[str, Any] = Field(default_factory=dict)
    replay: str | None = None
    """The `qaflow run` command that replays the trial behind the finding (`qaflow.audit.replay`); None for
    findings of the files alone."""


class TaskAudit(BaseModel):
    """One task's audit, as written by `qaflow audit --json` (docs/contracts.md, "JSON shapes")."""

    task: str
    path: str
    version: str | None
    verdict: Verdict
    findings: list[AuditFinding] = Field(default_factory=list)
    probes: dict[str, Any] = Field(default_factory=dict)
    """Per probe: rewards, exit statuses, timings (extra to the contract)."""
    timings: dict[str, float] = Field(default_factory=dict)
    backend: str | None = None
    """The backend its trials ran on (`--backend auto` picks one per task); None for a task that was not run."""


def verdict_for(findings: list[AuditFinding]) -> Verdict:
    if any(f.code is FindingCode.INVALID_TASK for f in findings):
        return Verdict.INVALID
    if any(f.severity is Severity.ERROR for f in findings):
        return Verdict.NEEDS_REPAIR
    return Verdict.ACCEPTED
