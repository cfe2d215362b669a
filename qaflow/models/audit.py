"""The audit's boundary types: findings with evidence, and the per-task report (docs/contracts.md, "JSON shapes")."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from qaflow.models.records import FindingCode, Severity, utcnow


class Verdict(StrEnum):
    ACCEPTED = "accepted"
    NEEDS_REPAIR = "needs_repair"
    INVALID = "invalid"


FINDING_ORDER: tuple[FindingCode, ...] = (
    FindingCode.REWARD_TAMPER,
    FindingCode.FALSE_PASS,
    FindingCode.WEAK_VERIFIER,
    FindingCode.FALSE_REJECTION,
    FindingCode.BROKEN_SOLUTION,
    FindingCode.FLAKY,
    FindingCode.LEAK,
    FindingCode.UNVERIFIED_REQUIREMENT,
    FindingCode.BUILD_FAILED,
    FindingCode.INVALID_TASK,
    FindingCode.INFRA_ERROR,
    FindingCode.AUDIT_ERROR,
    FindingCode.LINT,
)
"""Finding codes worst first: a verifier an agent can fool, then a task a right answer fails, then the rest.
Reports list findings in this order."""


def finding_rank(code: FindingCode) -> int:
    """Where `code` stands in `FINDING_ORDER` (0: the worst); a code missing there comes last."""
    return FINDING_ORDER.index(code) if code in FINDING_ORDER else len(FINDING_ORDER)


class AuditFinding(BaseModel):
    """One finding: what was seen (message, with how to fix it) and the evidence for it."""

    code: FindingCode
    severity: Severity = Severity.ERROR
    message: str
    evidence: dict[str, Any] = Field(default_factory=dict)
    replay: str | None = None
    """The `qaflow run` command that replays the trial behind the finding (`qaflow.audit.replay`); None for
    findings of the files alone."""


class AuditRecord(BaseModel):
    """One audit of a task version as the ledger's `audits` table keeps it: what the export's and the gate's
    facts read, instead of the reason text of the status the audit set."""

    model_config = ConfigDict(frozen=True)

    id: int | None = None
    task_version: str
    run_id: str | None = None
    """The audit's run; None only for an audit migrated from a status change recorded without one."""
    verdict: Verdict
    codes: list[str] = Field(default_factory=list)
    """The error codes it found, sorted, once each (text, so that codes of older releases read back)."""
    harness: list[str] | None = None
    """The harness holes its observed verifier has (proven or not: `qaflow.harden.gate.harness_exposure` keeps
    the proven ones); None where the audit recorded none (no observation, or migrated from an older ledger)."""
    created_at: datetime = Field(default_factory=utcnow)

    @field_validator("codes", "harness")
    @classmethod
    def _sorted(cls, names: list[str] | None) -> list[str] | None:
        return None if names is None else sorted(set(names))

    @property
    def summary(self) -> str:
        """`clean`, or its codes joined: the export's `audit_verdict` column."""
        return ", ".join(self.codes) or "clean"


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
    exposed_by: list[str] = Field(default_factory=list)
    """The proven harness holes (`HarnessHole.name`) that reach this task: an agent gets full reward on it
    through the harness whatever the verdict, which stays what the task's own findings say."""


REPORT_FORMAT: Literal[2] = 2
"""`AuditReport.format`: 2 is the document; 1 (no field) was the bare list of `TaskAudit`s."""


class HoleProof(BaseModel):
    """The one trial that tried a harness hole on a task: its plants alone, then the real verifier."""

    task: str
    proven: bool
    """Full reward from the plants alone (and not from doing nothing)."""
    reward: float | None = None
    files: list[str] = Field(default_factory=list)
    """The files the exploit planted."""
    replay: str | None = None
    """The `qaflow run ... --agent exploit:NAME` command that replays the trial."""


class HarnessHole(BaseModel):
    """A hole of the harness (the shared verifier mode, the verifier's own user), not of any one task: every
    task whose observed verifier has it is reached by it, and one trial on one task proves it."""

    name: str
    """The exploit's name, e.g. `harness-user-site`."""
    description: str
    proven: bool
    proof: HoleProof | None = None
    tasks: list[str] = Field(default_factory=list)
    """Every task the hole reaches."""


class AuditSummary(BaseModel):
    tasks: int
    verdicts: dict[Verdict, int]
    """Tasks per verdict (every verdict, 0 included)."""
    findings: dict[FindingCode, int]
    """Tasks per finding code, worst first (`FINDING_ORDER`), each task counted once per code."""
    exposed: int
    """Tasks reached by a proven harness hole."""
    accepted_exposed: int
    """Of those, tasks whose verdict is `accepted`: not clean to train on unless the harness is fixed."""


class AuditReport(BaseModel):
    """`qaflow audit --json`: the run, its summary, the harness holes, then one `TaskAudit` per task
    (docs/contracts.md, "JSON shapes")."""

    format: Literal[2] = REPORT_FORMAT
    run_ids: list[str] = Field(default_factory=list)
    """The audit run of each pool audited (one per pool), as the ledgers record them."""
    options: dict[str, Any] = Field(default_factory=dict)
    backend: str
    """The backend asked for, with the tasks each ran where `auto` chose per task (`auto: bwrap 61, docker 3`)."""
    seconds: float = 0.0
    summary: AuditSummary
    harness_holes: list[HarnessHole] = Field(default_factory=list)
    harness_note: str | None = None
    """The harness note of the text output, for people."""
    tasks: list[TaskAudit] = Field(default_factory=list)


def verdict_for(findings: list[AuditFinding]) -> Verdict:
    if any(f.code is FindingCode.INVALID_TASK for f in findings):
        return Verdict.INVALID
    if any(f.severity is Severity.ERROR for f in findings):
        return Verdict.NEEDS_REPAIR
    return Verdict.ACCEPTED
