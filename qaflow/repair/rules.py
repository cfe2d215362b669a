"""Rule repairs: deterministic fixes of mechanical defects, the embedded default repairer (no LLM).

Each `Rule` names the finding codes it addresses and a pure function from the task copy's text
files (task-relative path -> text: task.toml, the verifier's folders, the instructions, the
solutions and environment/, see `qaflow.repair.rule_files`) and the findings to the files it
changes (None deletes one). A rule
runs only when the findings hold one of its codes, and changes nothing when its defect is not
there. The `RuleRepairer` applies every rule in order on a copy, writes what changed, and gives up
when no rule applied; like any repair, its result counts only after a fresh audit.
"""

from __future__ import annotations

import copy
import posixpath
import re
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from shlex import quote as sh_quote
from typing import Any

from qaflow.models.audit import AuditFinding
from qaflow.models.records import FindingCode
from qaflow.repair import shell_fixes as sh
from qaflow.repair import sterile
from qaflow.repair.base import RepairOutcome
from qaflow.repair.image_rules import (
    DOCKERFILE,
    PLANT_EXPLOIT,
    SHADOW_EXPLOIT,
    exploit_files,
    fix_answers_into_tests,
    fix_grader_into_tests,
)
from qaflow.repair.rule_files import (
    MAX_RULE_FILE_BYTES,
    TaskChanges,
    TaskFiles,
    is_shell,
    read_rule_files,
    verifier_dir,
    write_rule_changes,
)
from qaflow.task import Task

__all__ = ["MAX_RULE_FILE_BYTES", "RULES", "Rule", "RuleRepairer", "TaskFiles", "read_rule_files"]

RuleFix = Callable[[TaskFiles, list[AuditFinding]], Mapping[str, str | None]]
"""(the copy's files, the findings) -> the files it changes: new text, or None to delete."""

DEFAULT_TIMEOUT_SEC = 600.0
PASSING_CODES = frozenset({FindingCode.FALSE_PASS, FindingCode.WEAK_VERIFIER})


@dataclass(frozen=True)
class Rule:
    name: str
    codes: frozenset[FindingCode]
    """Finding codes this rule addresses: it runs only when the findings hold one of them."""
    description: str
    fix: RuleFix


_verifier_dir = verifier_dir
_is_shell = is_shell


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


def fix_reward_tail(files: TaskFiles, _findings: list[AuditFinding]) -> TaskFiles:
    """The reward is 1 exactly when the checks exit 0 (`shell_fixes.reward_only_on_success` and
    `status_not_one_is_failure`)."""

    def fix(text: str) -> str | None:
        tail = sh.reward_only_on_success(text)
        status = sh.status_not_one_is_failure(tail if tail is not None else text)
        return status if status is not None else tail

    return _each(files, _is_shell, fix)


def fix_pytest_isolation(files: TaskFiles, findings: list[AuditFinding]) -> TaskFiles:
    """Where the python-plant or module-shadow exploit won: every pytest run of the verifier's scripts made unable to
    load what the agent wrote (`shell_fixes.isolate_pytest`), and run on the /tests copy of a test file
    it copied out of /tests (`shell_fixes.pytest_from_tests`)."""
    if not exploit_files(findings, PLANT_EXPLOIT) and not exploit_files(findings, SHADOW_EXPLOIT):
        return {}
    conftest = any(_verifier_dir(rel) and rel.rsplit("/", 1)[-1] == "conftest.py" for rel in files)
    pythonpath = re.compile(r"\bPYTHONPATH\b")
    shared = [files.get("task.toml") or "", files.get(DOCKERFILE) or ""]

    changes: TaskFiles = {}
    for rel, text in files.items():
        if _verifier_dir(rel) and _is_shell(rel, text):
            isolate = not any(pythonpath.search(t) for t in [text, *shared])
            fixed = sh.isolate_pytest(text, conftest=conftest, isolate=isolate)
            fixed = sh.pytest_from_tests(fixed or text) or fixed
            if fixed is not None and fixed != text:
                changes[rel] = fixed
    return changes


PATH_SHIM_EXPLOIT = "path-shim"
PATH_PRUNE = (
    "export PATH=\"$(printf '%s' \"$PATH\" | tr ':' '\\n' | grep -vxF{folders} | paste -sd: -)\""
    "  # qaflow: no agent-writable folder ahead on PATH\n"
)


def fix_path_ahead(files: TaskFiles, findings: list[AuditFinding]) -> TaskFiles:
    """Where the path-shim exploit won: each test.sh starts by dropping the folders it planted programs in
    (agent-writable, ahead of the real programs) from PATH, so what it runs by name is the image's."""
    folders = sorted({p.rsplit("/", 1)[0] for p in exploit_files(findings, PATH_SHIM_EXPLOIT) if p.count("/") > 1})
    if not folders:
        return {}
    line = PATH_PRUNE.format(folders="".join(f" -e {sh_quote(f)}" for f in folders))
    changes: TaskFiles = {}
    for rel, text in files.items():
        if not (_verifier_dir(rel) and rel.endswith("/test.sh")) or "qaflow: no agent-writable folder" in text:
            continue
        head, sep, rest = text.partition("\n") if text.startswith("#!") else ("", "", text)
        changes[rel] = f"{head}{sep}{line}{rest}" if head else f"{line}{rest}"
    return changes


EXIT_AT_IMPORT_EXPLOIT = "exit-at-import"
STERILE_EXPLOITS = (EXIT_AT_IMPORT_EXPLOIT,)
"""Exploits the sterile runner closes: the agent's module ending the verifier's pytest early with status 0."""


def fix_sterile_verifier(files: TaskFiles, findings: list[AuditFinding]) -> TaskFiles:
    """Where an agent module imported by the verifier's pytest ended it early with status 0 and got the reward:
    every pytest command of the verifier's scripts runs through the sterile runner (`qaflow.repair.sterile`),
    which passes only on pytest's junit report (at least one test passed, none failed or errored) and takes
    pytest's configuration from /tests only."""
    if not any(exploit_files(findings, name) for name in STERILE_EXPLOITS):
        return {}
    return sterile.sterile_changes(files)


SHELL_STARTUP_EXPLOIT = "shell-startup"
HOME_STARTUP = (".bash_profile", ".bashrc", ".profile")


def fix_startup_shell(files: TaskFiles, findings: list[AuditFinding]) -> TaskFiles:
    """Where shell-startup won through a home start-up file (a login or interactive shell of the verifier's):
    the verifier's scripts start their shells without `-l`/`--login`/`-i`. A file test.sh sources is left to
    the task's author (set PATH in test.sh instead)."""
    planted = exploit_files(findings, SHELL_STARTUP_EXPLOIT)
    if not any(posixpath.basename(p) in HOME_STARTUP for p in planted):
        return {}
    return _each(files, _is_shell, sh.no_startup_shell)


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
        "reward_tail",
        PASSING_CODES,
        "the reward is 1 exactly when the checks exit 0: no unconditional `echo 1` after `CHECKS || true`, "
        "no status test that takes every exit code but 1 as success",
        fix_reward_tail,
    ),
    Rule(
        "reward_on_failure",
        frozenset({FindingCode.REWARD_TAMPER}),
        "write a failing reward before the checks run, so a verifier that stops early still leaves one",
        fix_reward_on_failure,
    ),
    Rule(
        "grader_into_tests",
        frozenset({FindingCode.REWARD_TAMPER}),
        "the grader the verifier runs from the image (agent-writable) moves, with the folder it was copied with, "
        "into tests/ (out of the image) and runs from /tests",
        fix_grader_into_tests,
    ),
    Rule(
        "pytest_isolation",
        frozenset({FindingCode.REWARD_TAMPER}),
        "pytest runs so that it cannot load agent-written files: `python -I -m pytest`, -p no:cacheprovider, "
        "--noconftest (or --confcutdir=/tests)",
        fix_pytest_isolation,
    ),
    Rule(
        "path_ahead",
        frozenset({FindingCode.REWARD_TAMPER}),
        "test.sh drops the agent-writable folders ahead on PATH (where path-shim planted programs the verifier runs "
        "by name) before it runs anything",
        fix_path_ahead,
    ),
    Rule(
        "sterile_verifier",
        frozenset({FindingCode.REWARD_TAMPER}),
        "pytest runs through a runner in tests/ that passes only on its junit report (at least one test passed, "
        "none failed or errored), with its configuration from /tests only (-c, --rootdir, --confcutdir), no cache "
        "and no user site: a module of the agent's that ends pytest early no longer pays",
        fix_sterile_verifier,
    ),
    Rule(
        "startup_shell",
        frozenset({FindingCode.REWARD_TAMPER}),
        "the verifier's shells start without -l/--login/-i (a login or interactive shell reads start-up files in the "
        "agent's home, where shell-startup put its shims first on PATH)",
        fix_startup_shell,
    ),
    Rule(
        "answers_into_tests",
        frozenset({FindingCode.LEAK, FindingCode.REWARD_TAMPER}),
        "the expected answer the image ships (readable, or writable: expected-rewrite) is moved into tests/ (out "
        "of the image) and read from /tests",
        fix_answers_into_tests,
    ),
    Rule(
        "missing_timeouts",
        frozenset({FindingCode.LINT}),
        f"set [verifier]/[agent] timeout_sec = {DEFAULT_TIMEOUT_SEC:g} where task.toml has none",
        fix_missing_timeouts,
    ),
)


class RuleRepairer:
    """Applies `RULES` (or the given rules) to the task copy; gives up when none applies."""

    name = "rules"

    def __init__(self, rules: Sequence[Rule] = RULES):
        self.rules = tuple(rules)

    def repair(self, task: Task, work_dir: Path, findings: list[AuditFinding], round: int) -> RepairOutcome:
        before = read_rule_files(work_dir, whole_task=True)
        current = dict(before)
        codes = {f.code for f in findings}
        applied: list[dict[str, Any]] = []
        for rule in self.rules:
            if not rule.codes & codes:
                continue
            changes = {rel: text for rel, text in rule.fix(current, findings).items() if text != current.get(rel)}
            if changes:
                for rel, text in changes.items():
                    if text is None:
                        del current[rel]
                    else:
                        current[rel] = text
                applied.append({"rule": rule.name, "files": sorted(changes), "description": rule.description})
        changed: TaskChanges = {
            rel: current.get(rel) for rel in sorted(set(before) | set(current)) if current.get(rel) != before.get(rel)
        }
        write_rule_changes(work_dir, changed)
        changed_files = sorted(changed)
        if applied:
            summary = "; ".join(f"{a['rule']} ({', '.join(a['files'])}): {a['description']}" for a in applied)
        else:
            summary = f"no rule applies to {', '.join(sorted(c.value for c in codes)) or 'no findings'}"
        return RepairOutcome(
            summary=summary,
            changed_files=changed_files,
            outputs={"rules": applied, "round": round},
            gave_up=not changed_files,
        )
