"""Rule repairs: deterministic fixes of mechanical defects, the embedded default repairer (no LLM).

Each `Rule` names the finding codes it addresses and a pure function from the task copy's text
files (task-relative path -> text) and the findings to the files it changes. A rule runs only
when the findings hold one of its codes, and changes nothing when its defect is not there. The
`RuleRepairer` applies every rule in order on a copy, writes what changed, and gives up when no
rule applied; like any repair, its result counts only after a fresh audit.
"""

from __future__ import annotations

import copy
import re
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from qaflow.models.audit import AuditFinding
from qaflow.models.records import FindingCode
from qaflow.repair import shell_fixes as sh
from qaflow.repair.base import RepairOutcome
from qaflow.task import Task

TaskFiles = dict[str, str]
"""Task-relative POSIX path -> text, for task.toml and the verifier's files."""

RuleFix = Callable[[TaskFiles, list[AuditFinding]], TaskFiles]

DEFAULT_TIMEOUT_SEC = 600.0
MAX_RULE_FILE_BYTES = 1 << 20
PASSING_CODES = frozenset({FindingCode.FALSE_PASS, FindingCode.WEAK_VERIFIER})


@dataclass(frozen=True)
class Rule:
    name: str
    codes: frozenset[FindingCode]
    """Finding codes this rule addresses: it runs only when the findings hold one of them."""
    description: str
    fix: RuleFix


def _verifier_dir(rel: str) -> bool:
    parts = rel.split("/")
    return parts[0] == "tests" or (len(parts) > 3 and parts[0] == "steps" and parts[2] == "tests")


def _is_shell(rel: str, text: str) -> bool:
    return rel.endswith((".sh", ".bash")) or (
        "." not in rel.rsplit("/", 1)[-1] and re.match(r"#!.*\b(ba|da|z)?sh\b", text) is not None
    )


def _each(files: TaskFiles, want: Callable[[str, str], bool], fix: Callable[[str], str | None]) -> TaskFiles:
    changes = {}
    for rel, text in files.items():
        if _verifier_dir(rel) and want(rel, text) and (fixed := fix(text)) is not None:
            changes[rel] = fixed
    return changes


def fix_swallowed_status(files: TaskFiles, _findings: list[AuditFinding]) -> TaskFiles:
    return _each(files, _is_shell, sh.remove_swallowed_status)


def fix_always_true_status(files: TaskFiles, _findings: list[AuditFinding]) -> TaskFiles:
    return _each(files, _is_shell, sh.fix_always_true_status)


def fix_pytest_exit5(files: TaskFiles, _findings: list[AuditFinding]) -> TaskFiles:
    return _each(files, lambda rel, text: _is_shell(rel, text) or rel.endswith(".py"), sh.exit5_is_failure)


def shows_missing_reward(finding: AuditFinding) -> bool:
    """A reward_tamper finding whose evidence is a run that ended without any reward."""
    if finding.code is not FindingCode.REWARD_TAMPER:
        return False
    runs = finding.evidence.get("runs")
    errors = [str(r.get("error") or "") for r in runs if isinstance(r, dict)] if isinstance(runs, list) else []
    return any("reward" in e for e in errors) or "without writing any reward" in finding.message


def fix_reward_on_failure(files: TaskFiles, findings: list[AuditFinding]) -> TaskFiles:
    evidence = any(shows_missing_reward(f) for f in findings)
    changes = {}
    for rel, text in files.items():
        if not (_verifier_dir(rel) and rel.endswith("/test.sh")):
            continue
        folder = rel.rsplit("/", 1)[0] + "/"
        helpers = [t for r, t in files.items() if r.startswith(folder) and r != rel]
        reward_file = sh.reward_file_written(text, helpers)
        fixed = sh.write_failing_reward_first(text, reward_file, evidence=evidence)
        if fixed is not None:
            changes[rel] = fixed
    return changes


def set_default_timeouts(text: str, phases: Sequence[str], value: float = DEFAULT_TIMEOUT_SEC) -> str | None:
    """Set `timeout_sec` in each `[phase]` table of a task.toml text that lacks it, editing the text
    minimally (a line under the table's header, or a new table at the end) so that comments,
    order and unknown keys survive. None when nothing is missing or the edit would not parse to
    exactly the old document plus the new keys."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return None
    expected = copy.deepcopy(data)
    out = text
    for phase in phases:
        section = data.get(phase)
        if section is not None and (not isinstance(section, dict) or "timeout_sec" in section):
            continue
        lines = out.splitlines(keepends=True)
        header = re.compile(rf"^\s*\[\s*{re.escape(phase)}\s*\]\s*(#.*)?$")
        at = next((i for i, line in enumerate(lines) if header.match(line.rstrip("\r\n"))), None)
        setting = f"timeout_sec = {value!r}\n"
        if at is None:
            out = out + ("" if not out or out.endswith("\n") else "\n") + f"\n[{phase}]\n{setting}"
        else:
            if not lines[at].endswith("\n"):
                lines[at] += "\n"
            out = "".join([*lines[: at + 1], setting, *lines[at + 1 :]])
        expected.setdefault(phase, {})["timeout_sec"] = value
    if out == text:
        return None
    try:
        return out if tomllib.loads(out) == expected else None
    except tomllib.TOMLDecodeError:
        return None


def fix_missing_timeouts(files: TaskFiles, findings: list[AuditFinding]) -> TaskFiles:
    fields = {str(f.evidence.get("field", "")) for f in findings if f.code is FindingCode.LINT}
    phases = [p for p in ("verifier", "agent") if f"{p}.timeout_sec" in fields]
    text = files.get("task.toml")
    fixed = set_default_timeouts(text, phases) if text is not None and phases else None
    return {"task.toml": fixed} if fixed is not None else {}


RULES: tuple[Rule, ...] = (
    Rule(
        "swallowed_status",
        PASSING_CODES,
        "remove a `|| true` that hides the check command's exit status from the reward decision",
        fix_swallowed_status,
    ),
    Rule(
        "always_true_status",
        PASSING_CODES,
        "`[ $? ]` is always true: test `[ $? -eq 0 ]`",
        fix_always_true_status,
    ),
    Rule(
        "pytest_exit5",
        PASSING_CODES,
        "pytest exit code 5 (no tests collected) is a failure: succeed on exactly 0",
        fix_pytest_exit5,
    ),
    Rule(
        "reward_on_failure",
        frozenset({FindingCode.REWARD_TAMPER}),
        "write a failing reward before the checks run, so a verifier that stops early still leaves one",
        fix_reward_on_failure,
    ),
    Rule(
        "missing_timeouts",
        frozenset({FindingCode.LINT}),
        f"set [verifier]/[agent] timeout_sec = {DEFAULT_TIMEOUT_SEC:g} where task.toml has none",
        fix_missing_timeouts,
    ),
)


def read_rule_files(work_dir: Path) -> TaskFiles:
    """task.toml and every UTF-8 text file of the verifier folders (tests/, steps/*/tests/)."""
    files: TaskFiles = {}
    candidates = [
        work_dir / "task.toml",
        *sorted(work_dir.glob("tests/**/*")),
        *sorted(work_dir.glob("steps/*/tests/**/*")),
    ]
    for path in candidates:
        if not path.is_file() or path.is_symlink() or path.stat().st_size > MAX_RULE_FILE_BYTES:
            continue
        try:
            files[path.relative_to(work_dir).as_posix()] = path.read_bytes().decode("utf-8")
        except UnicodeDecodeError:
            continue
    return files


class RuleRepairer:
    """Applies `RULES` (or the given rules) to the task copy; gives up when none applies."""

    name = "rules"

    def __init__(self, rules: Sequence[Rule] = RULES):
        self.rules = tuple(rules)

    def repair(self, task: Task, work_dir: Path, findings: list[AuditFinding], round: int) -> RepairOutcome:
        before = read_rule_files(work_dir)
        current = dict(before)
        codes = {f.code for f in findings}
        applied: list[dict[str, Any]] = []
        for rule in self.rules:
            if not rule.codes & codes:
                continue
            changes = {rel: text for rel, text in rule.fix(current, findings).items() if text != current.get(rel)}
            if changes:
                current.update(changes)
                applied.append({"rule": rule.name, "files": sorted(changes), "description": rule.description})
        changed = sorted(rel for rel, text in current.items() if text != before.get(rel))
        for rel in changed:
            (work_dir / rel).write_bytes(current[rel].encode("utf-8"))
        if applied:
            summary = "; ".join(f"{a['rule']} ({', '.join(a['files'])}): {a['description']}" for a in applied)
        else:
            summary = f"no rule applies to {', '.join(sorted(c.value for c in codes)) or 'no findings'}"
        return RepairOutcome(
            summary=summary,
            changed_files=changed,
            outputs={"rules": applied, "round": round},
            gave_up=not changed,
        )
