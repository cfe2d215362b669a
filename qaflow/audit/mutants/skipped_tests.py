"""Tests a task ships but its verifier never runs, enabled: the proof that a surviving code mutant is wrong.

Exercism-style test files (and the Terminal-Bench adapters built on them) disable all but the first test
unless a flag is given: C/C++ Catch2 suites guard the rest with `#if defined(EXERCISM_RUN_ALL_TESTS)`,
JavaScript ones write `xtest(`, Rust ones `#[ignore]`, Java ones `@Disabled`, Go ones `t.Skip()`. A verifier
that runs the file as shipped checks one case, and a one-line bug passes it. `enabled_tests` rewrites the
tests folder with those tests enabled (`unskipped`, nothing else changed); the audit then runs the reference
solution on it (it must still get full reward, else the disabled tests are not a specification) and every
code mutant that passed the shipped verifier: one the enabled tests reject computes something the task's own
tests say is wrong. Conditional skips (`skipif`, a platform check) are left alone.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from qaflow.audit.mutants.base import Mutant, MutantKind, oracle_state
from qaflow.audit.mutants.brace import SUFFIXES, brace_mutants
from qaflow.models.audit import AuditFinding, FindingCode
from qaflow.text import utf8_text
from qaflow.trial.effects import Effect

MAX_FILE_BYTES = 2 * 1024 * 1024
_C_SUFFIXES = (".c", ".cc", ".cpp", ".cxx", ".h", ".hh", ".hpp")
_GUARD = re.compile(r"^\s*#\s*(?:if\s+defined\s*\(?\s*(\w*RUN_ALL\w*)\s*\)?|ifdef\s+(\w*RUN_ALL\w*))\s*$")
_IF = re.compile(r"^\s*#\s*if")
_ENDIF = re.compile(r"^\s*#\s*endif\b")
_JS_SKIP = re.compile(r"(?<!function )(?<![.\w])x(test|it|describe)\s*\(|\b(test|it|describe)\.skip\s*\(")
_LINE_END = r"[ \t]*(?:\n|\Z)"
_RUST_IGNORE = re.compile(r"^[ \t]*#\[ignore(?:\s*=\s*\"[^\"]*\")?\]" + _LINE_END, re.MULTILINE)
_JAVA_DISABLED = re.compile(r"^[ \t]*@(?:Disabled|Ignore)(?:\([^)\n]*\))?" + _LINE_END, re.MULTILINE)
_GO_SKIP = re.compile(r"^[ \t]*t\.Skip(?:f|Now)?\([^\n]*\)" + _LINE_END, re.MULTILINE)
_PY_SKIP = re.compile(r"^[ \t]*@(?:pytest\.mark\.skip|unittest\.skip)(?:\([^\n]*\))?" + _LINE_END, re.MULTILINE)


@dataclass(frozen=True)
class Enabled:
    path: str
    """The file, relative to the tests folder."""
    how: str
    """What disabled its tests (`EXERCISM_RUN_ALL_TESTS guard`, `xtest`, `#[ignore]`, ...)."""
    count: int
    """How many guards or markers were removed."""
    text: str


def enable_c_guards(text: str) -> tuple[str, int, str]:
    """The text without `#if defined(..RUN_ALL..)` / `#ifdef ..RUN_ALL..` lines and their matching `#endif`."""
    out: list[str] = []
    stack: list[bool] = []
    removed = 0
    name = ""
    for line in text.splitlines(keepends=True):
        guard = _GUARD.match(line)
        if guard:
            stack.append(True)
            removed += 1
            name = guard.group(1) or guard.group(2)
            continue
        if _IF.match(line):
            stack.append(False)
        elif _ENDIF.match(line) and stack and stack.pop():
            continue
        out.append(line)
    return "".join(out), removed, f"{name} guard"


def _by_pattern(
    pattern: re.Pattern[str], how: str, replace: Callable[[re.Match[str]], str]
) -> Callable[[str], tuple[str, int, str]]:
    def enable(text: str) -> tuple[str, int, str]:
        new, n = pattern.subn(replace, text)
        return new, n, how

    return enable


_js = _by_pattern(_JS_SKIP, "xtest / .skip", lambda m: f"{m.group(1) or m.group(2)}(")
_RULES: list[tuple[tuple[str, ...], Callable[[str], tuple[str, int, str]]]] = [
    (_C_SUFFIXES, enable_c_guards),
    ((".js", ".mjs", ".cjs", ".ts", ".jsx", ".tsx"), _js),
    ((".rs",), _by_pattern(_RUST_IGNORE, "#[ignore]", lambda m: "")),
    ((".java",), _by_pattern(_JAVA_DISABLED, "@Disabled", lambda m: "")),
    ((".go",), _by_pattern(_GO_SKIP, "t.Skip()", lambda m: "")),
    ((".py",), _by_pattern(_PY_SKIP, "skip marker", lambda m: "")),
]


def unskipped(tests_dir: Path) -> list[Enabled]:
    """Each file under `tests_dir` that disables some of its tests, with them enabled; [] when none does."""
    found: list[Enabled] = []
    if not tests_dir.is_dir():
        return found
    for path in sorted(tests_dir.rglob("*")):
        if path.is_symlink() or not path.is_file() or path.stat().st_size > MAX_FILE_BYTES:
            continue
        rule = next((enable for suffixes, enable in _RULES if path.suffix in suffixes), None)
        if rule is None:
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        new, count, how = rule(text)
        if count and new != text:
            found.append(Enabled(path=str(path.relative_to(tests_dir)), how=how, count=count, text=new))
    return found


def write_enabled(tests_dir: Path, enabled: list[Enabled]) -> None:
    """Rewrite the files of `enabled` in (a copy of) the tests folder `tests_dir`."""
    for item in enabled:
        (tests_dir / item.path).write_text(item.text, encoding="utf-8")


MAX_FILES = 2
MAX_MUTANTS = 10


def plan_enabled_mutants(effect: Effect, tests_dir: Path) -> tuple[list[Enabled], list[tuple[Mutant, str]], str | None]:
    """The tests to enable and the C-family code mutants (each with its diff) of what the reference solution
    wrote (not under a hidden folder) to try against them; (.., [], why) when there is nothing to do."""
    enabled = unskipped(tests_dir)
    if not enabled:
        return [], [], "the tests disable none of their tests"
    base, modes, links = oracle_state(effect)
    sources = [
        c for c in effect.written
        if c.file_type == "file" and c.content is not None and PurePosixPath(c.path).suffix in SUFFIXES
        and not any(part.startswith(".") for part in PurePosixPath(c.path).parts)
    ][:MAX_FILES]  # fmt: skip
    mutants: list[tuple[Mutant, str]] = []
    for change in sources:
        text = utf8_text(change.content or b"")
        if text is None:
            continue
        for cm in brace_mutants(change.path, text, limit=MAX_MUTANTS):
            writes = {**base, change.path: cm.source.encode()}
            mutant = Mutant(
                name=cm.name,
                kind=MutantKind.CODE,
                description=f"the oracle's result with one change to {change.path} (line {cm.line}, {cm.operator})",
                targets=[change.path],
                writes=writes,
                modes={p: m for p, m in modes.items() if writes.get(p) is not None},
                links=links,
            )
            mutants.append((mutant, cm.diff))
    why = None if mutants else "the reference solution wrote no C-family source file to mutate"
    return enabled, mutants[:MAX_MUTANTS], why


def judge_enabled(task: str, enabled: list[Enabled], wrong: list[tuple[Mutant, str]]) -> list[AuditFinding]:
    """One `weak_verifier` when code mutants passed the verifier and the task's own disabled tests reject them
    (`wrong`: each with its diff)."""
    if not wrong:
        return []
    marks = sum(e.count for e in enabled)
    files = ", ".join(sorted({f"tests/{e.path} ({e.how})" for e in enabled}))
    first = wrong[0][0]
    return [
        AuditFinding(
            code=FindingCode.WEAK_VERIFIER,
            message=(
                f"the verifier runs the tests with {marks} guard(s) or marker(s) disabling tests in {files}: "
                f"{len(wrong)} one-change mutant(s) of the reference solution's code get full reward though those "
                f"tests reject them (e.g. {first.name}); run the disabled tests too"
            ),
            evidence={
                "disabled": [{"file": f"tests/{e.path}", "how": e.how, "count": e.count} for e in enabled],
                "code_mutants": [
                    {
                        "mutant": m.name,
                        "diff": diff,
                        "reproduce": f"qaflow run {shlex.quote(task)} --agent mutant:{m.name}",
                    }
                    for m, diff in wrong[:5]
                ],
            },
        )
    ]
