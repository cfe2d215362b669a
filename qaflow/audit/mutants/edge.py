"""Edge-value mutants: wrong answers that the semantics of a careless comparison accept.

A verifier compares the work's answer (a file it wrote, or what a program of it printed in the verifier's traced
run) with the truth. Some comparisons accept values that no correct answer has, because of how the comparing
language reads them, whatever the task:

- `edge:pattern`: every answer `*`. A shell that compares with `[[ $want == $got ]]` or `case $want in $got)`
  reads the unquoted answer as a glob pattern, and `*` matches anything;
- `edge:arithmetic:NAME`: every answer NAME, a variable the verifier's shell scripts use in arithmetic.
  `[[ A -eq B ]]`, `(( ))`, `$(( ))` and `let` evaluate their operands as arithmetic expressions, where a name is
  read as the variable it names, so an answer naming the expected value's variable equals it;
- `edge:infinite` / `edge:not-a-number`: every decimal number in the answers made `inf` / `nan`: a tolerance
  relative to the answer (`abs(got - want) <= 1e-6 * abs(got)`) accepts an infinite one, an error bound written
  `if abs(got - want) > tol: fail` accepts NaN;
- `edge:emptied-lists`: every JSON list in the answers emptied: checks that walk the answer's items (`zip`,
  `all()` over them) accept none;
- `edge:reversed`: the answers' lines (or JSON lists) in reverse order, only where the instruction asks for an
  order (`qaflow.audit.mutants.stated`): a sorting task checked with `sorted(got) == sorted(want)` accepts them.

Each mutant changes every answer at once (one trial per kind); a kind that changes none is not made. Full
reward for one, where the nop fails, is `weak_verifier`, as for any mutant.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from qaflow.audit.mutants.base import Mutant, MutantKind, is_code, is_scratch, oracle_state
from qaflow.audit.mutants.output import (
    Recorded,
    printing_program,
    recorded_runs,
    unique_keys,
    work_programs,
)
from qaflow.audit.mutants.stated import asks_for_order
from qaflow.audit.observation import Observation
from qaflow.audit.trace import output_positions
from qaflow.text import utf8_text
from qaflow.trial.effects import Effect

MAX_ARITHMETIC_NAMES = 2
MAX_ANSWER_BYTES = 65536
_DECIMAL = re.compile(r"(?<![\w.])-?\d+\.\d+(?:[eE][-+]?\d+)?(?![\w.])|(?<![\w.])-?\d+[eE][-+]?\d+(?![\w.])")
_TEST = re.compile(r"\[\[(.*?)\]\]")
_ARITH_OP = re.compile(r"(\S+)\s+-(?:eq|ne|lt|le|gt|ge)\s+(\S+)")
_ARITH_BLOCK = re.compile(r"\(\((.*?)\)\)|\blet\s+([^;\n]+)")
_NAME = re.compile(r"\$?\{?([A-Za-z_][A-Za-z0-9_]*)\}?")
_CAPTURE = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)=[\"']?\$\(")
_PATTERN_TEST = re.compile(r"\[\[[^\]]*(?:==|!=|\s=\s)[^\]]*\]\]|\bcase\s+\S+\s+in\b")
_SHELL_BANG = re.compile(rb"#!\s*\S*(?:/|env\s+)(?:ba|da|z|k)?sh\b")


def shell_sources(tests_dir: Path) -> list[str]:
    """The verifier's shell scripts (by suffix or `#!` line), as text."""
    texts = []
    for path in sorted(tests_dir.rglob("*")) if tests_dir.is_dir() else []:
        if not path.is_file() or path.stat().st_size > 200_000:
            continue
        data = path.read_bytes()
        if path.suffix in (".sh", ".bash") or _SHELL_BANG.match(data):
            texts.append(data.decode("utf-8", "replace"))
    return texts


def arithmetic_names(shell: Iterable[str]) -> list[str]:
    """Variables the shell scripts read in arithmetic (operands of `-eq` and its kin in `[[ ]]`, names in `(( ))`,
    `$(( ))` and `let`), in the order they appear, except those assigned a program's output (`got=$(...)`): an
    answer naming one of these is read as its value."""
    found: dict[str, None] = {}
    captured: set[str] = set()
    for text in shell:
        captured |= set(_CAPTURE.findall(text))
        for test in _TEST.findall(text):
            for pair in _ARITH_OP.findall(test):
                for operand in pair:
                    m = _NAME.fullmatch(operand.strip("\"'"))
                    if m:
                        found.setdefault(m.group(1))
        for block in _ARITH_BLOCK.findall(text):
            for m in _NAME.finditer(" ".join(block)):
                found.setdefault(m.group(1))
    return [n for n in found if n not in captured and not n.isdigit()][:MAX_ARITHMETIC_NAMES]


def compares_patterns(shell: Iterable[str]) -> bool:
    """Whether a shell script of the verifier compares strings in `[[ ]]` or matches them with `case`."""
    return any(_PATTERN_TEST.search(text) for text in shell)


def _json(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return ...


def _walk(doc: Any, leaf: Callable[[Any], Any], lists: Callable[[list[Any]], list[Any]]) -> Any:
    if isinstance(doc, dict):
        return {k: _walk(v, leaf, lists) for k, v in doc.items()}
    if isinstance(doc, list):
        return lists([_walk(v, leaf, lists) for v in doc])
    return leaf(doc)


def _dump(doc: Any, like: str) -> str:
    indent = 2 if "\n" in like.strip() else None
    return json.dumps(doc, indent=indent) + like[len(like.rstrip()) :]


def _numbers(value: float) -> Callable[[str], str | None]:
    def change(text: str) -> str | None:
        doc = _json(text)
        if isinstance(doc, dict | list):
            floats = _walk(doc, lambda v: value if isinstance(v, float) else v, lambda items: items)
            return _dump(floats, text) if floats != doc else None
        word = "inf" if math.isinf(value) else "nan"
        new = _DECIMAL.sub(word, text)
        return new if new != text else None

    return change


def _emptied_lists(text: str) -> str | None:
    doc = _json(text)
    if doc is ...:
        return None
    emptied = _walk(doc, lambda v: v, lambda items: [])
    return _dump(emptied, text) if emptied != doc else None


def _reversed(text: str) -> str | None:
    doc = _json(text)
    if doc is not ... and not isinstance(doc, str | int | float | bool) and doc is not None:
        turned = _walk(doc, lambda v: v, lambda items: items[::-1])
        return _dump(turned, text) if turned != doc else None
    lines = text.splitlines()
    if len({ln for ln in lines if ln.strip()}) < 2:
        return None
    ends = text.endswith("\n")
    return "\n".join(lines[::-1]) + ("\n" if ends else "")


def _constant(word: str) -> Callable[[str], str | None]:
    def change(text: str) -> str | None:
        new = word + ("\n" if text.endswith("\n") or not text else "")
        return new if new != text else None

    return change


def edge_changes(instruction: str, shell: list[str]) -> list[tuple[str, Callable[[str], str | None]]]:
    """(mutant name, how it changes one answer's text) for each kind that applies to this task's verifier."""
    kinds: list[tuple[str, Callable[[str], str | None]]] = []
    if compares_patterns(shell):
        kinds.append(("edge:pattern", _constant("*")))
    kinds += [(f"edge:arithmetic:{name}", _constant(name)) for name in arithmetic_names(shell)]
    kinds += [("edge:infinite", _numbers(math.inf)), ("edge:not-a-number", _numbers(math.nan))]
    kinds.append(("edge:emptied-lists", _emptied_lists))
    if asks_for_order(instruction):
        kinds.append(("edge:reversed", _reversed))
    return kinds


def edge_mutants(
    effect: Effect,
    observation: Observation | None,
    instruction: str,
    shell: list[str],
    deliverable: Callable[[str], bool],
) -> list[Mutant]:
    """One mutant per edge kind that changes at least one answer: the deliverable data files the oracle wrote and
    the output of the work's programs the traced verifier ran."""
    base, modes, links = oracle_state(effect)
    files: dict[str, str] = {}
    for c in effect.written:
        data = base.get(c.path)
        if data is None or is_scratch(c.path) or is_code(c) or not deliverable(c.path) or len(data) > MAX_ANSWER_BYTES:
            continue
        text = utf8_text(data)
        if text is not None:
            files[c.path] = text
    programs = _program_answers(effect, observation)
    out: list[Mutant] = []
    for name, change in edge_changes(instruction, shell):
        writes: dict[str, bytes | None] = dict(base)
        targets = []
        for path, text in files.items():
            new = change(text)
            if new is not None:
                writes[path] = new.encode("utf-8")
                targets.append(path)
        for path, (recorded, python, outputs) in programs.items():
            program = _changed_program(recorded, python, outputs, change)
            if program is not None:
                writes[path] = program.encode("utf-8")
                targets.append(path)
        if not targets:
            continue
        out.append(
            Mutant(
                name=name,
                kind=MutantKind.EDGE,
                description=f"the oracle's result with every answer ({', '.join(sorted(targets))}) made "
                f"{name.removeprefix('edge:')} (a value no correct answer has)",
                targets=sorted(targets),
                writes=writes,
                modes={p: m for p, m in modes.items() if writes.get(p) is not None},
                links=links,
            )
        )
    return out


def _program_answers(
    effect: Effect, observation: Observation | None
) -> dict[str, tuple[list[Recorded], bool, list[int]]]:
    trace = observation.trace if observation is not None else None
    if observation is None or trace is None:
        return {}
    found = {}
    for (path, python), runs in work_programs(effect, trace).items():
        outputs = output_positions(trace, runs, python)
        found[path] = (recorded_runs(runs, python, outputs, observation.outputs), python, outputs)
    return found


def _changed_program(
    recorded: list[Recorded], python: bool, outputs: list[int], change: Callable[[str], str | None]
) -> str | None:
    printed: dict[str, str] = {}
    written: dict[str, dict[int, str]] = {}
    changed = False
    for r in recorded if unique_keys(recorded) else recorded[-1:]:
        key = r.key if unique_keys(recorded) else ""
        new = change(r.stdout)
        changed |= new is not None
        printed[key] = new if new is not None else r.stdout
        files = {i: change(t) for i, t in r.files.items()}
        changed |= any(t is not None for t in files.values())
        written[key] = {i: new_t if new_t is not None else r.files[i] for i, new_t in files.items()}
    if not changed:
        return None
    fallback = change("")
    if fallback is not None:
        printed.setdefault("", fallback)  # a constant answer: for arguments no recorded run had too
    return printing_program(recorded, printed, python=python, outputs=outputs, written=written)
