"""Instruction-overfit mutants: the reference solution answering correctly only the inputs the instruction shows.

A verifier that checks only the instruction's own examples passes a lookup table of them. The mutant is the
oracle's work with one Python file the verifier ran (as a script) or imported changed so that it answers as
the oracle does where every input is one of the instruction's examples, and wrongly anywhere else:

- a script: its arguments, and its standard input when it is a file or a pipe, must each be an example, and
  there must be one; otherwise it prints `?` and exits 0 (an argument naming a path is never an example: its
  content is the input, and a run given no input reads it from elsewhere);
- a module: each public function returns the oracle's value where it was given arguments and every one is
  an example, else None.

An example is what the instruction shows as code: a Markdown code span or block, whole or one of its words.
Full reward for such a mutant (where the nop fails) is `weak_verifier`: the tests check nothing beyond what
the agent was shown.
"""

from __future__ import annotations

import ast
import re

from qaflow.audit.mutants.base import Mutant, MutantKind, oracle_state
from qaflow.audit.observation import Observation
from qaflow.audit.trace import is_python, script_of
from qaflow.trial.effects import Effect

MAX_OVERFIT = 2
_FENCE = re.compile(r"```[^\n]*\n(.*?)```", re.S)
_SPAN = re.compile(r"`([^`\n]+)`")


def instruction_examples(instruction: str) -> list[str]:
    """What the instruction shows as code: each code span and block line, whole and word by word."""
    shown = [m.group(1) for m in _FENCE.finditer(instruction)]
    rest = _FENCE.sub("", instruction)
    shown += [m.group(1) for m in _SPAN.finditer(rest)]
    examples: dict[str, None] = {}
    for text in shown:
        for line in text.splitlines():
            if line.strip():
                examples[line.strip()] = None
                examples.update(dict.fromkeys(w.strip(".,;:()[]{}'\"") for w in line.split()))
    examples.pop("", None)
    return list(examples)


_SCRIPT_GUARD = '''import os as _qo, stat as _qst, sys as _qs
_QAFLOW_EXAMPLES = frozenset({examples!r})


def _qaflow_shown():
    """qaflow mutant: answer only the instruction's examples."""
    for _a in _qs.argv[1:]:
        if "/" in _a or _a.strip() not in _QAFLOW_EXAMPLES:
            return False
    _mode = _qo.fstat(0).st_mode if _qs.stdin is not None else 0
    _data = ""
    if _qst.S_ISREG(_mode) or _qst.S_ISFIFO(_mode):
        import io as _qio

        _data = _qs.stdin.read()
        _qs.stdin = _qio.StringIO(_data)
        if _data.strip() and _data.strip() not in _QAFLOW_EXAMPLES:
            return False
    return bool(_qs.argv[1:] or _data.strip())


if not _qaflow_shown():
    print("?")
    _qs.exit(0)
'''

_MODULE_SUFFIX = '''


def _qaflow_overfit():
    """qaflow mutant: every public function answers only the instruction's examples (else None)."""
    import functools
    import inspect

    examples = frozenset({examples!r})

    def shown(value):
        if value is None or isinstance(value, bool):
            return True
        if isinstance(value, (list, tuple, set, frozenset)):
            return all(shown(v) for v in value)
        if isinstance(value, dict):
            return all(shown(k) and shown(v) for k, v in value.items())
        return str(value) in examples or repr(value) in examples

    def overfit(function):
        @functools.wraps(function)
        def answer(*args, **kwargs):
            given = (*args, *kwargs.values())
            if given and all(shown(v) for v in given):
                return function(*args, **kwargs)
            return None

        return answer

    names = globals()
    for name, value in list(names.items()):
        if not name.startswith("_") and inspect.isfunction(value) and value.__module__ == __name__:
            names[name] = overfit(value)


_qaflow_overfit()
'''


def overfit_script(source: str, examples: list[str]) -> str:
    """`source` with the guard inserted after its `#!`, encoding and `from __future__` lines."""
    lines = source.splitlines(keepends=True)
    at = 0
    while at < len(lines) and (
        (at == 0 and lines[at].startswith("#!")) or re.match(r"#.*coding[:=]", lines[at]) or not lines[at].strip()
    ):
        at += 1
    for i, line in enumerate(lines):
        if line.startswith("from __future__ import"):
            at = max(at, i + 1)
    guard = _SCRIPT_GUARD.replace("{examples!r}", repr(sorted(examples)))
    return "".join(lines[:at]) + guard + "".join(lines[at:])


def overfit_module(source: str, examples: list[str]) -> str:
    return source.rstrip("\n") + "\n" + _MODULE_SUFFIX.replace("{examples!r}", repr(sorted(examples)))


def public_functions(source: str) -> list[str]:
    """The module's public top-level functions: what the module mutant changes (a module of classes alone, or one
    that does not parse, would be the oracle's own, no wrong solution)."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    defs = (ast.FunctionDef, ast.AsyncFunctionDef)
    return [n.name for n in tree.body if isinstance(n, defs) and not n.name.startswith("_")]


def overfit_mutants(effect: Effect, observation: Observation | None, instruction: str) -> list[Mutant]:
    """Up to `MAX_OVERFIT` mutants, one per Python file of the work the observed verifier ran as a script or
    imported; none where the instruction shows no example or the verifier was not traced."""
    trace = observation.trace if observation is not None else None
    examples = instruction_examples(instruction)
    if trace is None or not examples:
        return []
    base, modes, links = oracle_state(effect)
    pythons = {r.pid: r for r in trace.executed() if is_python(r)}
    scripts = {script_of(r) for r in pythons.values()}
    imported = {e.path for e in trace.events if e.pid in pythons and e.reads}
    out: list[Mutant] = []
    for path, data in sorted(base.items()):
        if data is None or not path.endswith(".py") or len(out) >= MAX_OVERFIT:
            continue
        try:
            source = data.decode("utf-8")
        except UnicodeDecodeError:
            continue
        if path in scripts:
            changed, how = overfit_script(source, examples), "answering only the instruction's examples (else `?`)"
        elif path in imported and public_functions(source):
            changed, how = overfit_module(source, examples), "its functions answering only the instruction's examples"
        else:
            continue
        writes = {**base, path: changed.encode("utf-8")}
        out.append(
            Mutant(
                name=f"{MutantKind.OVERFIT.value}:{path.lstrip('/')}",
                kind=MutantKind.OVERFIT,
                description=f"the oracle's result with {path} {how}: a lookup table of what the agent was shown",
                targets=[path],
                writes=writes,
                modes={p: m for p, m in modes.items() if writes.get(p) is not None},
                links=links,
            )
        )
    return out
