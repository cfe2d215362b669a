"""Audit output: the JSON contract, a summary a person reads in ten seconds, and a self-contained HTML page."""

from __future__ import annotations

import json
from collections import Counter
from importlib import resources
from pathlib import Path
from typing import Any

import jinja2
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from qaflow.atomic_file import write_text_atomic
from qaflow.models.audit import TaskAudit, Verdict
from qaflow.models.records import FindingCode, Severity

_VERDICT_STYLE = {Verdict.ACCEPTED: "green", Verdict.NEEDS_REPAIR: "red", Verdict.INVALID: "magenta"}


def to_json(audits: list[TaskAudit]) -> str:
    return json.dumps([a.model_dump(mode="json") for a in audits], indent=2)


def code_counts(audits: list[TaskAudit]) -> Counter[str]:
    """Tasks per finding code (errors and warnings), each task counted once per code."""
    return Counter(code for a in audits for code in {f.code.value for f in a.findings})


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


def print_summary(console: Console, audits: list[TaskAudit], *, backend: str, seconds: float) -> None:
    shown = backend_words(audits, backend)
    table = Table(title=f"audit · {len(audits)} tasks · {shown} · {seconds:.0f} s", title_justify="left")
    for col in ("task", "verdict", "findings", "time"):
        table.add_column(col, no_wrap=col != "findings")
    for a in sorted(audits, key=lambda a: (a.verdict != Verdict.ACCEPTED, a.verdict.value, a.task)):
        codes = ", ".join(
            sorted({f.code.value + ("" if f.severity is Severity.ERROR else " (warn)") for f in a.findings})
        )
        style = _VERDICT_STYLE[a.verdict]
        table.add_row(
            a.task, f"[{style}]{a.verdict.value}[/{style}]", codes or "—", f"{a.timings.get('total', 0):.1f}s"
        )
    console.print(table)
    for a in sorted(audits, key=lambda a: a.task):
        if a.verdict is Verdict.INVALID:  # why, in one line each: the table has no room for it
            for f in a.findings:
                if f.code is FindingCode.INVALID_TASK:
                    console.print(f"[magenta]invalid[/magenta] {escape(a.task)}: {escape(f.message)}", soft_wrap=True)
    verdicts = Counter(a.verdict.value for a in audits)
    line = ", ".join(f"{verdicts.get(v.value, 0)} {v.value}" for v in Verdict)
    console.print(f"[bold]{line}[/bold]")
    counts = code_counts(audits)
    if counts:
        console.print("findings: " + ", ".join(f"{code} {n}" for code, n in counts.most_common()))
    note = harness_note(audits)
    if note:
        shown = f" (e.g. {', '.join(note['files'][:3])})" if note["files"] else ""
        console.print(f"harness note: {note['message']}{shown}", markup=False)
    stand_ins = stand_in_note(audits)
    if stand_ins:
        console.print(f"stand-in images: {stand_ins['message']}", markup=False)


def write_html(path: Path, audits: list[TaskAudit], *, backend: str, run_id: str) -> None:
    template_text = resources.files("qaflow.audit").joinpath("report.html.j2").read_text(encoding="utf-8")
    env = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined)
    html = env.from_string(template_text).render(
        audits=sorted(audits, key=lambda a: (a.verdict != Verdict.ACCEPTED, a.task)),
        verdicts=Counter(a.verdict.value for a in audits),
        codes=code_counts(audits).most_common(),
        harness=harness_note(audits),
        stand_ins=stand_in_note(audits),
        backend=backend_words(audits, backend),
        run_id=run_id,
        json_dumps=lambda v: json.dumps(v, indent=2, default=str),
    )
    write_text_atomic(path, html)
