"""Edge-value mutants: wrong answers that the semantics of a careless comparison accept.

A verifier compares the work's answer (a file it wrote, or what a program of it printed in the verifier's traced
run) with the truth. Some comparisons accept values that no correct answer has, because of how the comparing
language reads them, whatever the task:

- `edge:pattern`: each line of every answer `*`. A shell that compares with `[[ $want == $got ]]` or
  `case $want in $got)` reads the unquoted answer as a glob pattern, and `*` matches anything;
- `edge:word-split`: each line `1 -o 1`. An unquoted variable in `[ ]` or `test` is split into operands, and
  `[ 1 -o 1 = N ]` is true (on either side of the comparison, with `=` or `-eq`);
- `edge:regex`: each line `.*`, where the verifier matches regular expressions (Python `re`, `=~`, `grep -E`): a
  check that passes the answer as the pattern (`re.fullmatch(line, want)`) matches anything;
- `edge:arithmetic:NAME`: each line NAME, a variable the verifier's shell scripts use in arithmetic.
  `[[ A -eq B ]]`, `(( ))`, `$(( ))` and `let` evaluate their operands as arithmetic expressions, where a name is
  read as the variable it names, so an answer naming the expected value's variable equals it;
- `edge:degenerate`: every decimal number infinite and every list empty (JSON, or a function's result): a
  tolerance relative to the answer (`abs(got - want) <= 1e-6 * abs(got)`), a `zip` that stops at the shorter
  list, checks over "all items" accept them;
- `edge:not-a-number`: every decimal number NaN: an error bound written `if abs(got - want) > tol: fail` accepts it;
- an SQLite database the work wrote: `degenerate` deletes every table's rows (a one-sided `EXCEPT`, expected values
  recomputed from the work's own tables accept it), `not-a-number` makes NULL every column of numbers only (no
  comparison with NULL is true: `WHERE got != want` finds no wrong row);
- `edge:reversed`: the answers' lines (or lists) in reverse order, only where the instruction asks for an order
  (`qaflow.audit.mutants.stated`) and never the lines of a mapping: a sorting task checked with
  `sorted(got) == sorted(want)` accepts them.

Each mutant changes every answer at once (one trial per kind); a kind that changes none is not made. Full
reward for one, where the nop fails, is `weak_verifier`, as for any mutant.
"""

from __future__ import annotations

import ast
import posixpath
import re
import sqlite3
import tempfile
from collections.abc import Callable, Iterable
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

from qaflow.audit.mutants import edge_values
from qaflow.audit.mutants.base import Mutant, MutantKind, is_code, is_scratch, oracle_state
from qaflow.audit.mutants.edge_values import change_text, constant_answer
from qaflow.audit.mutants.output import Recorded, printing_program, recorded_runs, unique_keys, work_programs
from qaflow.audit.mutants.stated import asks_for_order
from qaflow.audit.observation import MAX_MODULES, Observation, imported_modules
from qaflow.audit.trace import TracedRun, VerifierTrace, output_positions, python_readers, script_of
from qaflow.text import folder_texts, utf8_text
from qaflow.trial.effects import Effect

MAX_ARITHMETIC_NAMES = 2
MAX_ANSWER_BYTES = 65536
_TEST = re.compile(r"\[\[(.*?)\]\]")
_ARITH_OP = re.compile(r"(\S+)\s+-(?:eq|ne|lt|le|gt|ge)\s+(\S+)")
_ARITH_BLOCK = re.compile(r"\(\((.*?)\)\)|\blet\s+([^;\n]+)")
_NAME = re.compile(r"\$?\{?([A-Za-z_][A-Za-z0-9_]*)\}?")
_CAPTURE = re.compile(r"\b([A-Za-z_][A-Za-z0-9_]*)=[\"']?\$\(")
_PATTERN_TEST = re.compile(r"\[\[[^\]]*(?:==|!=|\s=\s)[^\]]*\]\]|\bcase\s+\S+\s+in\b")
_SHELL_BANG = re.compile(r"#!\s*\S*(?:/|env\s+)(?:ba|da|z|k)?sh\b")
_SINGLE_TEST = re.compile(r"(?<![\[\w])(?:\[\s([^\]\n]*?)\s\](?!\])|\btest\s([^;&|\n]*))")
_UNQUOTED_VAR = re.compile(r"(?:^|\s)\$\{?[A-Za-z_]\w*\}?(?=\s|$)")
_REGEX_USE = re.compile(
    r"\bre\.(?:fullmatch|match|search|compile)\(\s*[A-Za-z_][\w.\[\]]*\s*[,)]"  # a pattern from a variable
    r"|=~\s*\"?\$|\bgrep\b[^\n|]*\s-[A-Za-z]*f\b|\bgrep\b[^\n|]*\s-[A-Za-z]*[EP][A-Za-z]*\s+\"?\$"
)


@dataclass(frozen=True)
class VerifierSources:
    """The verifier's files as text: its shell scripts, and the rest (Python checkers, data)."""

    shell: list[str]
    other: list[str]


def verifier_sources(tests_dir: Path) -> VerifierSources:
    """The verifier's text files, its shell scripts (by suffix or `#!` line) apart."""
    shell: list[str] = []
    other: list[str] = []
    for path, text in folder_texts(tests_dir):
        (shell if path.suffix in (".sh", ".bash") or _SHELL_BANG.match(text) else other).append(text)
    return VerifierSources(shell=shell, other=other)


def splits_words(shell: Iterable[str]) -> bool:
    """Whether a shell script of the verifier gives `[ ]` or `test` an unquoted variable: its value is split into
    words, each an operand (`1 -o 1` makes any test true)."""
    return any(_UNQUOTED_VAR.search(a or b) for text in shell for a, b in _SINGLE_TEST.findall(text))


def matches_regex(sources: VerifierSources) -> bool:
    """Whether the verifier matches regular expressions it does not spell out (Python `re` with a pattern from a
    variable, bash `=~ $x`, `grep -E "$x"`, `grep -f`): an answer used as the pattern (arguments swapped) matches
    anything as `.*`."""
    return any(_REGEX_USE.search(text) for text in [*sources.shell, *sources.other])


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


def edge_kinds(instruction: str, sources: VerifierSources) -> list[str]:
    """The edge kinds (`edge_values`) that apply to this task's verifier and instruction."""
    shell = sources.shell
    kinds = ["pattern"] if compares_patterns(shell) else []
    kinds += ["word-split"] if splits_words(shell) else []
    kinds += ["regex"] if matches_regex(sources) else []
    kinds += [f"arithmetic:{name}" for name in arithmetic_names(shell)]
    kinds += ["degenerate", "not-a-number"]
    return kinds + (["reversed"] if asks_for_order(instruction) else [])


VALUE_KINDS = frozenset({"degenerate", "not-a-number", "reversed"})
"""Kinds that change a function's result; the others are answers a shell compares as text."""
HIDDEN = ".qaflow-edge"
"""Where a wrapper keeps the work's own program or module, beside it."""


def edge_mutants(
    effect: Effect,
    observation: Observation | None,
    instruction: str,
    sources: VerifierSources,
    deliverable: Callable[[str], bool],
) -> list[Mutant]:
    """One mutant per edge kind that changes at least one answer: the deliverable data files the oracle wrote, the
    work's programs the traced verifier ran (a Python script wrapped so that what it prints and the files it
    writes come out changed, for any input; another program replaying its recorded runs changed) and the work's
    modules a Python of the verifier imported (each public function's result changed)."""
    base, modes, links = oracle_state(effect)
    files: dict[str, str] = {}
    databases: dict[str, bytes] = {}
    for c in effect.written:
        data = base.get(c.path)
        if data is None or is_scratch(c.path) or is_code(c) or not deliverable(c.path):
            continue
        if data.startswith(SQLITE_MAGIC) and len(data) <= MAX_DATABASE_BYTES:
            databases[c.path] = data
            continue
        text = utf8_text(data) if len(data) <= MAX_ANSWER_BYTES else None
        if text is not None:
            files[c.path] = text
    programs = _program_answers(effect, observation)
    modules = _imported_modules(effect, observation, {p.path for p in programs})
    out: list[Mutant] = []
    for kind in edge_kinds(instruction, sources):
        writes: dict[str, bytes | None] = dict(base)
        targets = []
        for path, text in files.items():
            new = change_text(kind, text)
            if new is not None:
                writes[path] = new.encode("utf-8")
                targets.append(path)
        for path, data in databases.items():
            changed_db = changed_database(kind, data)
            if changed_db is not None:
                writes[path] = changed_db
                targets.append(path)
        for p in programs:
            if not _changed(kind, p.recorded, p.fixed):
                continue
            if p.python:
                writes.update(
                    _wrapped(p.path, base.get(p.path) or b"", _script_wrapper(kind, p.path, list(p.fixed), p.outputs))
                )
            else:
                writes[p.path] = _replayed(kind, p.recorded, p.outputs).encode("utf-8")
            targets.append(p.path)
        if kind in VALUE_KINDS:
            for path in modules:
                writes.update(_wrapped(path, base.get(path) or b"", _module_wrapper(kind, path)))
                targets.append(path)
        if not targets:
            continue
        out.append(
            Mutant(
                name=f"edge:{kind}",
                kind=MutantKind.EDGE,
                description=f"the oracle's result with every answer ({', '.join(sorted(targets))}) made "
                f"{kind} (a value no correct answer has)",
                targets=sorted(targets),
                writes=writes,
                modes={p: m for p, m in modes.items() if writes.get(p) is not None} | _hidden_modes(writes),
                links=links,
            )
        )
    return out


SQLITE_MAGIC = b"SQLite format 3\0"
MAX_DATABASE_BYTES = 8 * 1024 * 1024


def changed_database(kind: str, data: bytes) -> bytes | None:
    """An SQLite database changed by `kind`: `degenerate`, every table's rows deleted (its tables kept);
    `not-a-number`, every value of a column that holds only numbers made NULL (SQL's unknown, which no comparison
    is true of); None for other kinds, where nothing changes, or where it cannot be read."""
    if kind not in ("degenerate", "not-a-number"):
        return None
    with tempfile.TemporaryDirectory(prefix="qaflow-edge-db-") as tmp:
        path = Path(tmp) / "db.sqlite"
        path.write_bytes(data)
        try:
            with closing(sqlite3.connect(path)) as db:
                db.execute("PRAGMA trusted_schema = OFF")  # the task's database is untrusted: none of its triggers
                triggers = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'")]
                for trigger in triggers:
                    db.execute('DROP TRIGGER "' + trigger.replace('"', '""') + '"')
                changed = 0
                tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
                for table in (t for t in tables if not t.startswith("sqlite_")):
                    q = '"' + table.replace('"', '""') + '"'
                    if kind == "degenerate":
                        changed += db.execute(f"DELETE FROM {q}").rowcount
                        continue
                    for column in [r[1] for r in db.execute(f"PRAGMA table_info({q})")]:
                        c = '"' + column.replace('"', '""') + '"'
                        kinds = {r[0] for r in db.execute(f"SELECT DISTINCT typeof({c}) FROM {q}")}
                        if kinds and kinds <= {"integer", "real"}:
                            changed += db.execute(f"UPDATE {q} SET {c} = NULL").rowcount
                db.commit()
                if not changed:
                    return None
                db.execute("VACUUM")
        except sqlite3.Error:
            return None
        return path.read_bytes()


def _hidden(path: str) -> str:
    return posixpath.join(posixpath.dirname(path), HIDDEN, posixpath.basename(path))


def _hidden_modes(writes: dict[str, bytes | None]) -> dict[str, int]:
    return {p: 0o644 for p in writes if f"/{HIDDEN}/" in p}


def _wrapped(path: str, original: bytes, wrapper: str) -> dict[str, bytes | None]:
    return {path: wrapper.encode("utf-8"), _hidden(path): original}


def _imported_modules(effect: Effect, observation: Observation | None, programs: set[str]) -> list[str]:
    """The work's Python modules a Python of the verifier imported (read without running it as its script) whose
    public top-level names are functions only: a wrapper changes what each of those returns, and a public class
    it would leave as it was (so the verifier could use only right answers)."""
    if observation is None or not observation.observed:
        return []
    found = set(imported_modules(observation, effect))
    if observation.trace is not None:
        work = {c.path for c in effect.written if c.path.endswith(".py") and c.content is not None}
        for path, runs in python_readers(observation.trace).items():
            if path in work and any(script_of(r) != path for r in runs):
                found.add(path)
    sources = {c.path: c.content or b"" for c in effect.written}
    return sorted(p for p in found - programs if _functions_only(sources.get(p, b"")))[:MAX_MODULES]


def _functions_only(source: bytes) -> bool:
    try:
        tree = ast.parse(source.decode("utf-8", "replace"))
    except SyntaxError:
        return False
    public = [n for n in tree.body if isinstance(n, ast.FunctionDef | ast.ClassDef) and not n.name.startswith("_")]
    return bool(public) and all(isinstance(n, ast.FunctionDef) for n in public)


@dataclass(frozen=True)
class ProgramAnswer:
    """A program of the work the traced verifier ran, with what its runs printed and wrote."""

    path: str
    python: bool
    """A Python runs it as a script (it is wrapped); else its recorded runs are replayed."""
    recorded: list[Recorded]
    outputs: list[int]
    """Positions of its arguments that name a file it wrote."""
    fixed: dict[str, str]
    """Files it wrote at paths no argument named (an output it always writes), with what they held after the run
    (empty where not kept)."""


def _program_answers(effect: Effect, observation: Observation | None) -> list[ProgramAnswer]:
    trace = observation.trace if observation is not None and observation.observed else None
    if observation is None or trace is None:
        return []
    found = []
    for (path, python), runs in work_programs(effect, trace).items():
        outputs = output_positions(trace, runs, python)
        recorded = recorded_runs(runs, python, outputs, observation.outputs)
        fixed = {f: observation.outputs.get(f, "") for f in _fixed_outputs(trace, runs, outputs, python)}
        found.append(ProgramAnswer(path, python, recorded, outputs, fixed))
    return found


def _fixed_outputs(trace: VerifierTrace, runs: list[TracedRun], outputs: list[int], python: bool) -> list[str]:
    """Files the runs wrote at paths none of their arguments named (an output file the program always writes)."""
    skip = 2 if python else 1
    named = {r.argv[skip + i] for r in runs for i in outputs if skip + i < len(r.argv)}
    pids = {r.pid for r in runs}
    return list(dict.fromkeys(e.path for e in trace.events if e.pid in pids and e.writes and e.path not in named))


def _changed(kind: str, recorded: list[Recorded], fixed: dict[str, str]) -> bool:
    texts = [r.stdout for r in recorded] + [t for r in recorded for t in r.files.values()] + list(fixed.values())
    return any(change_text(kind, t) is not None for t in texts if t or constant_answer(kind) is not None)


def _replayed(kind: str, recorded: list[Recorded], outputs: list[int]) -> str:
    """A program replaying its recorded runs, each one's output and argument-named files changed by `kind`."""
    unique = unique_keys(recorded)
    printed: dict[str, str] = {}
    written: dict[str, dict[int, str]] = {}
    for r in recorded if unique else recorded[-1:]:
        key = r.key if unique else ""
        printed[key] = change_text(kind, r.stdout) or r.stdout
        written[key] = {i: change_text(kind, t) or t for i, t in r.files.items()}
    if constant_answer(kind) is not None:
        printed.setdefault("", change_text(kind, "") or "")
    return printing_program(recorded, printed, python=False, outputs=outputs, written=written)


_VALUES_SOURCE = Path(edge_values.__file__).read_text(encoding="utf-8")


_RUN_AS = "; ".join(
    [
        "import runpy, sys",
        "sys.argv[0] = {path!r}",
        "sys.path[0] = {folder!r}",
        "runpy.run_path({hidden!r}, run_name='__main__')",
    ]
)
"""The work's own script, run as if from its place: its folder first on sys.path (its sibling modules import)."""


def _script_wrapper(kind: str, path: str, fixed: list[str], outputs: list[int]) -> str:
    """A Python script that runs the work's own script (kept beside it) with the same arguments and input, then
    prints its output and rewrites the files it wrote (`fixed` paths, and those its arguments at `outputs` name)
    changed by `kind`, and exits as it did; where `kind` changes none of them it prints nothing and fails (every
    run is wrong)."""
    return (
        f"#!/usr/bin/env python3\n{_VALUES_SOURCE}\n"
        "import subprocess as _sp, sys as _sys\n"
        f"_run = {_RUN_AS.format(path=path, folder=posixpath.dirname(path), hidden=_hidden(path))!r}\n"
        "_done = _sp.run([_sys.executable, '-c', _run, *_sys.argv[1:]], stdout=_sp.PIPE)\n"
        "_out = _done.stdout.decode('utf-8', 'surrogateescape')\n"
        f"_new = change_text({kind!r}, _out)\n_changed = _new is not None\n"
        f"for _p in {fixed!r} + [_sys.argv[1 + _i] for _i in {outputs!r} if 1 + _i < len(_sys.argv)]:\n"
        "    try:\n        _t = open(_p, encoding='utf-8').read()\n"
        "    except (OSError, ValueError):\n        continue\n"
        f"    _n = change_text({kind!r}, _t)\n"
        "    if _n is not None:\n        open(_p, 'w', encoding='utf-8').write(_n)\n        _changed = True\n"
        "if not _changed:\n    _sys.exit(_done.returncode or 97)\n"
        "_sys.stdout.write(_new if _new is not None else _out)\n_sys.stdout.flush()\n"
        "_sys.exit(_done.returncode)\n"
    )


def _module_wrapper(kind: str, path: str) -> str:
    """A module that loads the work's own module (kept beside it) and is it, except that each public function it
    defines returns its result changed by `kind`, or raises where `kind` changes nothing in it (so that every call
    is wrong: a result left right would make a verifier that checks only that call look weak)."""
    return (
        f"{_VALUES_SOURCE}\n"
        "import functools as _ft, importlib.util as _iu\n"
        f"_spec = _iu.spec_from_file_location(__name__ + '_qaflow_edge', {_hidden(path)!r})\n"
        "_own = _iu.module_from_spec(_spec)\n_spec.loader.exec_module(_own)\n"
        "def _changed(_f):\n"
        "    @_ft.wraps(_f)\n"
        "    def _g(*a, **k):\n        _r = _f(*a, **k)\n"
        f"        _n = change_value({kind!r}, _r)\n"
        "        if repr(_n) == repr(_r):\n"
        f"            raise RuntimeError('edge mutant: no {kind} value to give')\n"
        "        return _n\n"
        "    return _g\n"
        "for _n in dir(_own):\n"
        "    if _n.startswith('__'):\n        continue\n"
        "    _v = getattr(_own, _n)\n"
        "    _mine = callable(_v) and not isinstance(_v, type) and getattr(_v, '__module__', None) == _own.__name__\n"
        "    globals()[_n] = _changed(_v) if _mine and not _n.startswith('_') else _v\n"
    )
