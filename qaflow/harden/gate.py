"""The acceptance gate: a hardened or repaired version is accepted only on independent evidence.

Three pieces of evidence, all read from the ledger:
- audit: the latest audit of the version has no error finding, and every probe ran (nop, oracle,
  tamper and at least one mutant). The latest audit is the run that last wrote a probe result, a
  finding or an `audit:` status change for the version;
- oracle: the reference solution ran and got full reward in every recorded oracle trial;
- attempts: other solvers' attempts, i.e. model rollouts of the version (errors left out) and
  imported attempt results (`attempt:<solver>`), by any solver but the change's author (`harden:author`,
  or the repairer of a `repair:` version; `llm:<model>` also excludes that model's rollouts), with a
  pass rate inside the band: exclusive (0, 1) by default, so a version nobody solves or everybody
  solves is not accepted.

A fourth check: no proven harness hole reaches the version (`harness_exposure`: a hole of the shared verifier
mode that one audit trial proved gives full reward on every task whose observed verifier has it), unless the
user allows them (`--allow-harness-holes`). `is_clean` is the one answer to "may this version be trained on?",
for this gate and the exports alike.

All present and sound: the version becomes `accepted`. Otherwise it is a `candidate` (a version
whose audit already marked it `needs_repair`, or that is `invalid`, keeps that status). Each decision
is stored as a `gate:decision` result (attempt = the decision's number) with the evidence used.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, Field, model_validator

from qaflow.audit.exploits import HARNESS_EXPLOITS
from qaflow.audit.exploits.lookup import observed_harness_exploits
from qaflow.harden.versions import author_of
from qaflow.ledger import Ledger, StatusWriter
from qaflow.models.probe_key import ProbeKind, name_of, probe_name
from qaflow.models.records import Finding, Result, Severity, TaskVersion, VersionStatus
from qaflow.models.trial import ExitStatus

DECISION_PROBE = probe_name(ProbeKind.GATE, "decision")
AUDIT_PROBES = tuple(probe_name(k) for k in (ProbeKind.NOP, ProbeKind.ORACLE, ProbeKind.TAMPER))
KEEPS_STATUS = frozenset({VersionStatus.NEEDS_REPAIR, VersionStatus.INVALID, VersionStatus.RETIRED})


class Band(BaseModel):
    """The pass rates the gate accepts: between `low` and `high`, bounds excluded unless `inclusive`."""

    low: float = Field(0.0, ge=0.0, le=1.0)
    high: float = Field(1.0, ge=0.0, le=1.0)
    inclusive: bool = False

    @model_validator(mode="after")
    def _ordered(self) -> Band:
        if self.low > self.high or (not self.inclusive and self.low == self.high):
            raise ValueError(f"band ({self.low}, {self.high}) holds no pass rate")
        return self

    @classmethod
    def parse(cls, text: str, *, inclusive: bool = False) -> Band:
        """`LOW,HIGH`, e.g. `0,1` or `0.1,0.9`."""
        low, sep, high = text.partition(",")
        if not sep:
            raise ValueError(f"band {text!r}: expected LOW,HIGH such as 0,1")
        return cls(low=float(low), high=float(high), inclusive=inclusive)

    def contains(self, rate: float) -> bool:
        if self.inclusive:
            return self.low <= rate <= self.high
        return self.low < rate < self.high

    def __str__(self) -> str:
        return f"[{self.low:g}, {self.high:g}]" if self.inclusive else f"({self.low:g}, {self.high:g})"


class GateConfig(BaseModel):
    band: Band = Field(default_factory=Band)
    min_attempts: int = Field(1, ge=1, description="Fewest other-solver attempts that count as evidence")
    allow_harness_holes: bool = Field(
        False, description="Accept a version a proven harness hole reaches (the harness is trusted to be fixed)"
    )


class EvidenceKind(StrEnum):
    AUDIT = "audit"
    ORACLE = "oracle"
    ATTEMPTS = "attempts"
    HARNESS = "harness"


class Evidence(BaseModel):
    kind: EvidenceKind
    ok: bool
    summary: str = Field(description="What was found, or what is missing, for people")
    detail: dict[str, Any] = Field(default_factory=dict)


class GateDecision(BaseModel):
    task: str
    version: str
    author: str | None
    accepted: bool
    status: VersionStatus = Field(description="The version's status after the decision")
    evidence: list[Evidence]
    band: Band

    @property
    def missing(self) -> list[Evidence]:
        return [e for e in self.evidence if not e.ok]


def solver_differs(solver: str, author: str | None) -> bool:
    """Whether `solver` is someone other than `author` (`llm:<model>` is the same solver as `<model>`)."""
    if author is None:
        return True
    return solver not in {author, author.removeprefix("llm:")}


# -- clean: may this version be trained on? --------------------------------------------------------


ALLOW_HOLES_FLAG = "--allow-harness-holes"
"""The opt-in, spelled the same by `qaflow accept` and the exports."""


def proven_harness_holes(results: Iterable[Result]) -> dict[str, str]:
    """The harness holes an audit proved, each with the version it was proven on: its exploit trial (the
    plants alone) got full reward where doing nothing does not."""
    results = list(results)
    nop_full: dict[str, list[bool]] = {}
    for r in results:
        if r.probe == probe_name(ProbeKind.NOP):
            nop_full.setdefault(r.task_version, []).append(bool(r.payload.get("full")))
    proven: dict[str, str] = {}
    for r in results:
        hole = name_of(r.probe, ProbeKind.EXPLOIT)
        if hole is None or hole not in HARNESS_EXPLOITS or not r.payload.get("full"):
            continue
        nops = nop_full.get(r.task_version, [])
        if not (nops and all(nops)):
            proven.setdefault(hole, r.task_version)
    return proven


def harness_exposure(ledger: Ledger, versions: Iterable[str] | None = None) -> dict[str, list[str]]:
    """Per task version (of `versions`, or every version the ledger knows): the proven harness holes
    (`proven_harness_holes`, proven on any task of the pool) that its latest observed verifier has (as its latest
    audit recorded them; for audits that recorded none, as its latest observe result shows); versions no proven
    hole reaches are left out."""
    results = ledger.results()
    proven = proven_harness_holes(results)
    if not proven:
        return {}
    wanted = set(versions) if versions is not None else None
    has: dict[str, list[str]] = {
        version: audit.harness
        for version, audit in ledger.latest_audits().items()
        if audit.harness is not None and (wanted is None or version in wanted)
    }
    unrecorded: dict[str, list[Result]] = {}
    for r in results:
        if r.probe == "observe" and r.task_version not in has and (wanted is None or r.task_version in wanted):
            unrecorded.setdefault(r.task_version, []).append(r)
    has.update((version, list(observed_harness_exploits(observed))) for version, observed in unrecorded.items())
    exposure = {}
    for version, holes in has.items():
        if reached := sorted(set(holes) & set(proven)):
            exposure[version] = reached
    return exposure


class Cleanliness(BaseModel):
    """Whether a task version may be trained on, and why not."""

    version: str
    clean: bool
    reason: str | None = Field(None, description="Why it is not clean; None when it is")
    exposed_by: list[str] = Field(default_factory=list, description="Proven harness holes that reach it")


def clean_reason(status: VersionStatus, exposed_by: Sequence[str], *, allow_harness_holes: bool = False) -> str | None:
    """Why a version with `status`, reached by the proven harness holes `exposed_by`, is not clean; None when it
    is: accepted, and no proven harness hole reaches it unless they are allowed."""
    if status is not VersionStatus.ACCEPTED:
        return f"the task version is {status.value}, not accepted"
    if exposed_by and not allow_harness_holes:
        return (
            f"a proven harness hole ({', '.join(exposed_by)}) gives full reward on it without solving it "
            f"(fix the harness, or allow it with {ALLOW_HOLES_FLAG})"
        )
    return None


def is_clean(
    ledger: Ledger,
    version: TaskVersion,
    *,
    allow_harness_holes: bool = False,
    exposure: Mapping[str, list[str]] | None = None,
) -> Cleanliness:
    """May `version` be trained on (`clean_reason`)? `exposure` is `harness_exposure(ledger)` when the caller
    asks for many versions (read once); otherwise it is read for this version."""
    if exposure is None:
        exposure = harness_exposure(ledger, [version.version])
    exposed = list(exposure.get(version.version, []))
    reason = clean_reason(version.status, exposed, allow_harness_holes=allow_harness_holes)
    return Cleanliness(version=version.version, clean=reason is None, reason=reason, exposed_by=exposed)


# -- evidence ----------------------------------------------------------------------------------------


def harness_evidence(exposed_by: Sequence[str], config: GateConfig) -> Evidence:
    detail = {"exposed_by": list(exposed_by), "allowed": config.allow_harness_holes}
    if not exposed_by:
        return Evidence(kind=EvidenceKind.HARNESS, ok=True, detail=detail, summary="no proven harness hole reaches it")
    holes = ", ".join(exposed_by)
    if config.allow_harness_holes:
        summary = f"reached by the proven harness hole {holes} (allowed with {ALLOW_HOLES_FLAG})"
        return Evidence(kind=EvidenceKind.HARNESS, ok=True, detail=detail, summary=summary)
    summary = (
        f"reached by the proven harness hole {holes}: an agent gets full reward through the harness "
        f"(fix it, or accept anyway with {ALLOW_HOLES_FLAG})"
    )
    return Evidence(kind=EvidenceKind.HARNESS, ok=False, detail=detail, summary=summary)


def audit_evidence(ledger: Ledger, version: str, results: list[Result], findings: list[Finding]) -> Evidence:
    probes = [r for r in results if r.probe in AUDIT_PROBES or name_of(r.probe, ProbeKind.MUTANT) is not None]
    stamped = [(r.created_at, r.run_id) for r in probes]
    stamped += [(f.created_at, f.run_id) for f in findings]
    stamped += [(a.created_at, a.run_id) for a in ledger.audits(task_version=version) if a.run_id]
    if not stamped:
        return Evidence(kind=EvidenceKind.AUDIT, ok=False, summary="no audit of this version (run `qaflow audit`)")
    run_id = max(stamped, key=lambda s: s[0])[1]
    errors = [f for f in findings if f.run_id == run_id and f.severity is Severity.ERROR]
    ran = {r.probe for r in probes}
    mutants = sorted(p for p in ran if name_of(p, ProbeKind.MUTANT) is not None)
    absent = [p for p in AUDIT_PROBES if p not in ran] + ([] if mutants else ["mutants"])
    error_codes = sorted({f.code.value for f in errors})
    detail = {"run_id": run_id, "errors": error_codes, "mutants": len(mutants), "missing_probes": absent}
    if errors:
        codes = ", ".join(error_codes)
        return Evidence(kind=EvidenceKind.AUDIT, ok=False, summary=f"the latest audit found {codes}", detail=detail)
    if absent:
        why = " (mutants run only when the oracle passes)" if "mutants" in absent else ""
        return Evidence(kind=EvidenceKind.AUDIT, ok=False, detail=detail,
                        summary=f"the audit is incomplete: no {', '.join(absent)} probe{why}")  # fmt: skip
    return Evidence(kind=EvidenceKind.AUDIT, ok=True, detail=detail,
                    summary=f"clean audit {run_id} ({len(mutants)} mutants rejected)")  # fmt: skip


def oracle_evidence(results: list[Result]) -> Evidence:
    runs = [r for r in results if r.probe == probe_name(ProbeKind.ORACLE)]
    if not runs:
        return Evidence(kind=EvidenceKind.ORACLE, ok=False, summary="the reference solution was never run")
    full = [r for r in runs if r.status is ExitStatus.OK and bool(r.payload.get("full", (r.reward or 0) >= 1.0))]
    detail = {"runs": len(runs), "full": len(full)}
    if len(full) != len(runs):
        return Evidence(kind=EvidenceKind.ORACLE, ok=False, detail=detail,
                        summary=f"the reference solution passed {len(full)} of {len(runs)} runs")  # fmt: skip
    return Evidence(kind=EvidenceKind.ORACLE, ok=True, detail=detail,
                    summary=f"the reference solution passed {len(runs)} of {len(runs)} runs")  # fmt: skip


def attempt_outcomes(ledger: Ledger, version: str, results: list[Result]) -> list[tuple[str, bool, str]]:
    """(solver, passed, where) of every recorded attempt at `version`: rollouts and imported results."""
    found = [
        (r.model, r.passed, f"rollout {r.rollout_id}")
        for r in ledger.rollouts(task_version=version)
        if r.exit_status is not ExitStatus.ERROR
    ]
    for r in results:
        solver = name_of(r.probe, ProbeKind.ATTEMPT)
        if solver is not None:
            passed = bool(r.payload.get("passed", (r.reward or 0.0) >= 1.0))
            found.append((solver, passed, f"imported attempt {r.attempt}"))
    return found


def attempts_evidence(
    ledger: Ledger, version: str, results: list[Result], author: str | None, config: GateConfig
) -> Evidence:
    outcomes = attempt_outcomes(ledger, version, results)
    others = [(s, p) for s, p, _ in outcomes if solver_differs(s, author)]
    own = len(outcomes) - len(others)
    solvers = sorted({s for s, _ in others})
    passed = sum(p for _, p in others)
    detail = {"attempts": len(others), "passed": passed, "solvers": solvers, "author_attempts_left_out": own,
              "band": str(config.band)}  # fmt: skip
    if len(others) < config.min_attempts:
        whose = f"; {own} by the author {author} do not count" if own else ""
        summary = f"{len(others)} attempts by other solvers, {config.min_attempts} needed{whose}"
        summary += " (run rollouts, or `qaflow attempts import`)"
        return Evidence(kind=EvidenceKind.ATTEMPTS, ok=False, summary=summary, detail=detail)
    rate = passed / len(others)
    detail["pass_rate"] = rate
    text = f"{passed}/{len(others)} attempts by {', '.join(solvers)} passed (rate {rate:.2f}"
    if not config.band.contains(rate):
        return Evidence(kind=EvidenceKind.ATTEMPTS, ok=False, detail=detail,
                        summary=f"{text}, outside the band {config.band})")  # fmt: skip
    return Evidence(kind=EvidenceKind.ATTEMPTS, ok=True, detail=detail, summary=f"{text} in {config.band})")


# -- decision ---------------------------------------------------------------------------------------


def evaluate(ledger: Ledger, version: TaskVersion, config: GateConfig | None = None) -> GateDecision:
    """The gate's decision on `version`, from the ledger alone (nothing is written)."""
    config = config or GateConfig()
    results = ledger.results(task_version=version.version)
    findings = ledger.findings(task_version=version.version)
    author = author_of(ledger, version)
    evidence = [
        audit_evidence(ledger, version.version, results, findings),
        oracle_evidence(results),
        attempts_evidence(ledger, version.version, results, author, config),
        harness_evidence(harness_exposure(ledger, [version.version]).get(version.version, []), config),
    ]
    accepted = all(e.ok for e in evidence)
    if accepted:
        status = VersionStatus.ACCEPTED
    elif version.status in KEEPS_STATUS:
        status = version.status
    else:
        status = VersionStatus.CANDIDATE
    return GateDecision(task=version.name, version=version.version, author=author, accepted=accepted,
                        status=status, evidence=evidence, band=config.band)  # fmt: skip


def decide(ledger: Ledger, version: TaskVersion, *, run_id: str, config: GateConfig | None = None) -> GateDecision:
    """Evaluate `version`, set its status (reason: the evidence) and store the decision as a result."""
    decision = evaluate(ledger, version, config)
    if decision.accepted:
        reason = "gate: accepted: " + "; ".join(e.summary for e in decision.evidence)
    else:
        reason = "gate: missing: " + "; ".join(f"{e.kind.value}: {e.summary}" for e in decision.missing)
    ledger.set_status(version.version, decision.status, by=StatusWriter.GATE, reason=reason[:1000], run_id=run_id)
    earlier = [r for r in ledger.results(task_version=version.version) if r.probe == DECISION_PROBE]
    ledger.put_result(
        Result(task_version=version.version, probe=DECISION_PROBE, attempt=len(earlier), run_id=run_id,
               backend="none", status=ExitStatus.OK, payload=decision.model_dump(mode="json")),
    )  # fmt: skip
    return decision
