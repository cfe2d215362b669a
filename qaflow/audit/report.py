"""Audit output: the JSON document (`AuditReport`), a summary a person reads in ten seconds, and a
self-contained HTML page that puts what needs action first."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2
from pydantic import TypeAdapter, ValidationError
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from qaflow.atomic_file import write_text_atomic
from qaflow.models.audit import (
    FINDING_ORDER,
    AuditFinding,
    AuditReport,
    AuditSummary,
    HarnessHole,
    HoleProof,
    TaskAudit,
    Verdict,
    finding_rank,
)
from qaflow.models.records import FindingCode, Severity

_VERDICT_STYLE = {Verdict.ACCEPTED: "green", Verdict.NEEDS_REPAIR: "red", Verdict.INVALID: "magenta"}


def to_json(report: AuditReport) -> str:
    return report.model_dump_json(indent=2)


class ReportFormatError(ValueError):
    """An audit JSON that is neither the document (`AuditReport`) nor the list of tasks of format 1."""


def load_report(text: str) -> AuditReport:
    """An audit JSON as an `AuditReport`: the document as written, or the bare list of tasks that format 1
    wrote (its summary and holes rebuilt from the tasks, the run unknown).

    Raises:
        ReportFormatError: not JSON, or neither shape.
    """
    try:
        data = json.loads(text)
        if isinstance(data, list):
            return build_report(TypeAdapter(list[TaskAudit]).validate_python(data), backend="unknown")
        return AuditReport.model_validate(data)
    except (json.JSONDecodeError, ValidationError) as e:
        raise ReportFormatError(f"not an audit report ({type(e).__name__}: {str(e).splitlines()[0]})") from e


def code_counts(audits: list[TaskAudit]) -> Counter[str]:
    """Tasks per finding code (errors and warnings), each task counted once per code."""
    return Counter(code for a in audits for code in {f.code.value for f in a.findings})


def ranked_codes(audits: list[TaskAudit]) -> list[tuple[FindingCode, int]]:
    """(code, tasks) of every code found, worst first (`FINDING_ORDER`)."""
    counts = Counter(code for a in audits for code in {f.code for f in a.findings})
    return sorted(counts.items(), key=lambda item: (finding_rank(item[0]), item[0].value))


HOLE_TEXT = {
    "harness-pytest-root": "pytest looks for its configuration up to /, where the agent can plant /conftest.py "
    "(and /pytest.ini)",
    "harness-user-site": "Python runs .pth files from the user site of the verifier's user, which the agent can create",
    "harness-path": "a folder the agent can create programs in comes first on the verifier's PATH",
}


def harness_note(audits: list[TaskAudit]) -> dict[str, Any] | None:
    """Once per pool: tasks whose observed verifier ran or loaded system files the agent can write (an
    agent that runs as root in the shared verifier mode can replace the interpreter or coreutils), and the
    holes every such task shares (`exploits.harness_exploits`), each with the trial that proved it on one
    task and the command that replays it. A property of the harness, not of any task: never a per-task
    finding."""
    tasks: list[str] = []
    system_tasks = 0
    files: Counter[str] = Counter()
    holes: dict[str, list[str]] = {}
    proofs: dict[str, dict[str, Any]] = {}
    for a in audits:
        note = (a.probes.get("observe") or {}).get("harness")
        if not note:
            continue
        if note.get("system_files") or note.get("holes"):
            tasks.append(a.task)
        files.update(note.get("system_files", []))
        system_tasks += bool(note.get("system_files"))
        for hole in note.get("holes") or {}:
            holes.setdefault(hole, []).append(a.task)
        for hole, proof in (note.get("proofs") or {}).items():
            if hole not in proofs or (proof.get("proven") and not proofs[hole].get("proven")):
                proofs[hole] = proof | {"task": a.task}
    if not tasks:
        return None
    parts = []
    if files:
        parts.append(
            f"in {system_tasks} task(s) the verifier runs or loads system files the agent can write "
            "(it runs as root, in the shared verifier mode): an agent could replace them to pass"
        )
    for hole, where in sorted(holes.items()):
        proof = proofs.get(hole)
        shown = f"{HOLE_TEXT.get(hole, hole)} ({len(where)} task(s))"
        if proof is not None:
            outcome = "full reward" if proof.get("proven") else f"no full reward (reward {proof.get('reward')})"
            shown += f"; the plant alone got {outcome} on {proof['task']}: `{proof['replay']}`"
        parts.append(shown)
    return {
        "tasks": sorted(tasks),
        "files": [f for f, _ in files.most_common(8)],
        "holes": {hole: sorted(where) for hole, where in sorted(holes.items())},
        "proofs": proofs,
        "message": "; ".join(parts)
        + '; run untrusted agents with the verifier in its own image ([verifier] environment_mode = "separate"), '
        "as a non-root agent user and a verifier user of its own, with python3 -I and pytest -c /tests/pytest.ini",
    }


def harness_holes(audits: list[TaskAudit]) -> list[HarnessHole]:
    """The pool's harness holes (`harness_note`), each with the tasks it reaches and the trial that tried it."""
    note = harness_note(audits)
    if note is None:
        return []
    holes = []
    for name, tasks in note["holes"].items():
        found = note["proofs"].get(name)
        proof = None
        if found is not None:
            proof = HoleProof(
                task=found["task"],
                proven=bool(found.get("proven")),
                reward=found.get("reward"),
                files=list(found.get("files") or []),
                replay=found.get("replay"),
            )
        description = HOLE_TEXT.get(name, name)
        holes.append(HarnessHole(name=name, description=description, proven=bool(proof and proof.proven),
                                 proof=proof, tasks=tasks))  # fmt: skip
    return holes


def mark_exposed(audits: list[TaskAudit], holes: list[HarnessHole]) -> list[TaskAudit]:
    """`audits` with `exposed_by` set: the proven holes among `holes` that reach each task."""
    reached: dict[str, list[str]] = {}
    for hole in holes:
        if hole.proven:
            for task in hole.tasks:
                reached.setdefault(task, []).append(hole.name)
    return [a.model_copy(update={"exposed_by": sorted(reached.get(a.task, []))}) for a in audits]


def summarize(audits: list[TaskAudit]) -> AuditSummary:
    verdicts = Counter(a.verdict for a in audits)
    exposed = [a for a in audits if a.exposed_by]
    return AuditSummary(
        tasks=len(audits),
        verdicts={v: verdicts.get(v, 0) for v in Verdict},
        findings=dict(ranked_codes(audits)),
        exposed=len(exposed),
        accepted_exposed=sum(a.verdict is Verdict.ACCEPTED for a in exposed),
    )


def build_report(
    audits: list[TaskAudit],
    *,
    backend: str,
    run_ids: list[str] | None = None,
    options: dict[str, Any] | None = None,
    seconds: float = 0.0,
) -> AuditReport:
    """The audit's document: the tasks marked with the proven harness holes that reach them, and the summary."""
    holes = harness_holes(audits)
    marked = mark_exposed(audits, holes)
    note = harness_note(audits)
    return AuditReport(
        run_ids=run_ids or [],
        options=options or {},
        backend=backend_words(marked, backend),
        seconds=round(seconds, 3),
        summary=summarize(marked),
        harness_holes=holes,
        harness_note=note["message"] if note else None,
        tasks=marked,
    )


def stand_in_note(audits: list[TaskAudit]) -> dict[str, Any] | None:
    """Once per pool: tasks built on a stand-in image (`QAFLOW_IMAGE_ALIASES` or the default aliases)
    because the image they name is missing here; their verdicts hold for the stand-in's userland."""
    tasks: list[str] = []
    pairs: Counter[str] = Counter()
    for a in audits:
        used = (a.probes.get("build") or {}).get("stand_ins") or {}
        if used:
            tasks.append(a.task)
            pairs.update(f"{name} -> {local}" for name, local in used.items())
    if not tasks:
        return None
    shown = ", ".join(p for p, _ in pairs.most_common(4))
    return {
        "tasks": sorted(tasks),
        "stand_ins": dict(pairs.most_common()),
        "message": f"{len(tasks)} task(s) ran on a stand-in for an image missing here ({shown})",
    }


def backend_words(audits: list[TaskAudit], backend: str) -> str:
    """The run's backend, with how many tasks each one ran where `auto` chose per task (`auto: bwrap 61,
    docker 3`)."""
    used = Counter(a.backend for a in audits if a.backend)
    if len(used) < 2:
        return next(iter(used), backend) if backend == "auto" else backend
    return f"{backend}: " + ", ".join(f"{name} {n}" for name, n in sorted(used.items()))


def worst_first(audit: TaskAudit) -> tuple[bool, int, bool, str]:
    """Sort key of the summary's rows: tasks with errors first, by their worst code (`FINDING_ORDER`), then the
    accepted ones a proven harness hole reaches, then the clean ones; by name within each."""
    worst = min(
        (finding_rank(f.code) for f in audit.findings if f.severity is Severity.ERROR), default=len(FINDING_ORDER)
    )
    return (audit.verdict is Verdict.ACCEPTED, worst, not audit.exposed_by, audit.task)


def print_summary(console: Console, report: AuditReport) -> None:
    audits = report.tasks
    title = f"audit · {len(audits)} tasks · {report.backend} · {report.seconds:.0f} s"
    table = Table(title=title, title_justify="left")
    for col in ("task", "verdict", "findings", "time"):
        table.add_column(col, no_wrap=col != "findings")
    for a in sorted(audits, key=worst_first):
        codes = ", ".join(
            sorted({f.code.value + ("" if f.severity is Severity.ERROR else " (warn)") for f in a.findings})
        )
        style = _VERDICT_STYLE[a.verdict]
        verdict = f"[{style}]{a.verdict.value}[/{style}]"
        if a.exposed_by:
            verdict += f" [red](exposed: {', '.join(a.exposed_by)})[/red]"
        table.add_row(a.task, verdict, codes or "—", f"{a.timings.get('total', 0):.1f}s")
    console.print(table)
    for a in sorted(audits, key=lambda a: a.task):
        if a.verdict is Verdict.INVALID:  # why, in one line each: the table has no room for it
            for f in a.findings:
                if f.code is FindingCode.INVALID_TASK:
                    console.print(f"[magenta]invalid[/magenta] {escape(a.task)}: {escape(f.message)}", soft_wrap=True)
    summary = report.summary
    line = ", ".join(f"{summary.verdicts.get(v, 0)} {v.value}" for v in Verdict)
    console.print(f"[bold]{line}[/bold]", soft_wrap=True)
    if summary.exposed:
        proven = ", ".join(h.name for h in report.harness_holes if h.proven)
        console.print(
            f"[red]exposed:[/red] {summary.exposed} task(s) ({summary.accepted_exposed} of them accepted) are reached "
            f"by a proven harness hole ({proven}): not clean to train on until the harness is fixed",
            soft_wrap=True,
        )
    if summary.findings:
        console.print("findings: " + ", ".join(f"{code.value} {n}" for code, n in summary.findings.items()),
                      soft_wrap=True)  # fmt: skip
    note = harness_note(audits)
    if note:
        shown = f" (e.g. {', '.join(note['files'][:3])})" if note["files"] else ""
        console.print(f"harness note: {note['message']}{shown}", markup=False, soft_wrap=True)
    stand_ins = stand_in_note(audits)
    if stand_ins:
        console.print(f"stand-in images: {stand_ins['message']}", markup=False, soft_wrap=True)


@dataclass(frozen=True)
class FindingGroup:
    """The HTML page's findings of one code: the tasks that have it (by name) with their findings of that code."""

    code: str
    count: int
    severity: str
    """error when any of its findings is an error, else warning."""
    entries: list[tuple[TaskAudit, list[AuditFinding]]]


def finding_groups(report: AuditReport) -> list[FindingGroup]:
    """One group per code found, worst first (`FINDING_ORDER`)."""
    groups = []
    for code, count in report.summary.findings.items():
        entries = [
            (a, [f for f in a.findings if f.code is code])
            for a in sorted(report.tasks, key=lambda a: a.task)
            if any(f.code is code for f in a.findings)
        ]
        errors = any(f.severity is Severity.ERROR for _, found in entries for f in found)
        groups.append(FindingGroup(code=code.value, count=count, severity="error" if errors else "warning",
                                   entries=entries))  # fmt: skip
    return groups


def write_html(path: Path, report: AuditReport) -> None:
    template_text = resources.files("qaflow.audit").joinpath("report.html.j2").read_text(encoding="utf-8")
    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)
    audits = report.tasks
    html = env.from_string(template_text).render(
        report=report,
        groups=finding_groups(report),
        needing_work=sorted((a for a in audits if a.verdict is not Verdict.ACCEPTED), key=lambda a: a.task),
        accepted=sorted((a for a in audits if a.verdict is Verdict.ACCEPTED), key=lambda a: (not a.exposed_by, a.task)),
        stand_ins=stand_in_note(audits),
        json_dumps=lambda v: json.dumps(v, indent=2, default=str),
    )
    write_text_atomic(path, html)
