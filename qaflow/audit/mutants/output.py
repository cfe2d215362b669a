"""Output mutants: wrong answers of the right vocabulary, from what the work printed in the verifier's traced run.

When the verifier runs a program of the work (the reference solution wrote it) and reads what it prints, the
answer exists only at verify time, so the mutants of the oracle's files cannot reach it. The traced run
recorded it (`qaflow.audit.trace`): each run of the work program, with its arguments and its output. Two wrong
solutions are built from those records, each a program of the same language that answers without working:

- `more-than-asked`: every run prints every line the work printed in any run (where the runs printed different
  things): a verifier that looks for the expected answer in the output, instead of comparing the output with
  it, passes a program that prints every possible answer;
- `less-than-asked`: every run prints what the work printed for the same arguments without its first line
  (where a run printed two lines or more): a verifier that only checks that what is printed is right (and not
  that everything asked is there) passes a program that leaves answers out.

Files the work wrote that its arguments name are created empty (the run's output is its stdout); exit statuses
are kept. Full reward for such a mutant, where the nop fails, is `weak_verifier`, as for any mutant.
"""

from __future__ import annotations

import posixpath
import shlex

from qaflow.audit.effects import Effect
from qaflow.audit.mutants.base import Mutant, MutantKind, oracle_state
from qaflow.audit.observation import Observation
from qaflow.audit.trace import SHELLS, TracedRun, VerifierTrace, is_python, output_positions, runs_the_work, script_of

MAX_OUTPUT_MUTANTS = 2
MAX_PRINTED = 16384
MORE = "more-than-asked"
LESS = "less-than-asked"


def _program(run: TracedRun, work: set[str]) -> tuple[str, bool] | None:
    """The work's program `run` runs, and whether a Python runs it as a script; None for other runs (`-m`, `-c`,
    interpreters other than Python and the shells)."""
    if run.exe in work:
        return run.exe, False
    script = script_of(run)
    if script is None or script not in work or run.argv[1:2] != [script]:
        return None
    if is_python(run):
        return script, True
    return (script, False) if posixpath.basename(run.exe) in SHELLS else None


def _lines(text: str) -> list[str]:
    return [ln for ln in text.splitlines() if ln.strip()]


def printing_program(runs: list[TracedRun], printed: dict[str, str], *, python: bool, outputs: list[int]) -> str:
    """A program that, for the arguments of one of `runs` (its key in `printed`, the words after the program or
    script joined by \\x1f), prints `printed[key]` (`printed[""]` for any arguments when given) and exits as that
    run did; it creates empty the files its arguments name at `outputs` and reads no input."""
    skip = 2 if python else 1
    codes = {"\x1f".join(r.argv[skip:]): min(max(r.exit or 0, 0), 255) for r in runs}
    default = min(max(runs[-1].exit or 0, 0), 255)
    if python:
        return (
            "#!/usr/bin/env python3\nimport sys\n"
            f"_k = chr(31).join(sys.argv[1:])\n_p = {printed!r}\n"
            f"for _i in {outputs!r}:\n    try:\n        open(sys.argv[1 + _i], 'w').close()\n"
            "    except (IndexError, OSError):\n        pass\n"
            "sys.stdout.write(_p.get(_k, _p.get('', '')))\nsys.stdout.flush()\n"
            f"sys.exit({codes!r}.get(_k, {default}))\n"
        )
    lines = ["#!/bin/sh", "u=$(printf '\\037'); k=; for a; do k=$k$a$u; done"]
    lines += [f'[ "$#" -gt {i} ] && : > "${{{i + 1}}}" 2>/dev/null' for i in outputs]
    every = printed.get("")
    if every is not None:
        lines.append(f"printf '%s' {shlex.quote(every)}")
    for key, text in printed.items():
        if key and "\n" not in key:
            lines.append(f'[ "$k" = {shlex.quote(key + chr(31))} ] && printf %s {shlex.quote(text)}')
    for key, code in codes.items():
        if "\n" not in key:
            lines.append(f'[ "$k" = {shlex.quote(key + chr(31) if key else "")} ] && exit {code}')
    return "\n".join([*lines, f"exit {default}"]) + "\n"


def _more(runs: list[TracedRun]) -> dict[str, str] | None:
    outputs = {"\n".join(_lines(r.stdout)) for r in runs}
    if len(outputs) < 2:
        return None
    every = list(dict.fromkeys(ln for r in runs for ln in _lines(r.stdout)))
    text = "".join(f"{ln}\n" for ln in every)
    return {"": text} if len(text) <= MAX_PRINTED else None


def _less(runs: list[TracedRun], skip: int) -> dict[str, str] | None:
    printed: dict[str, str] = {}
    for r in runs:
        key, lines = "\x1f".join(r.argv[skip:]), _lines(r.stdout)
        if key in printed:
            return None  # the same arguments printed twice (input read elsewhere): which is which is unknown
        printed[key] = "".join(f"{ln}\n" for ln in lines[1:])
    if not any(len(_lines(r.stdout)) >= 2 for r in runs) or sum(map(len, printed.values())) > MAX_PRINTED:
        return None
    if "" in printed and len(printed) > 1:
        return None  # the run without arguments would stand for every run
    return printed


def output_mutants(effect: Effect, observation: Observation | None) -> list[Mutant]:
    """Up to `MAX_OUTPUT_MUTANTS` mutants of the work's programs the observed verifier ran and read the output of;
    none where the verifier was not traced."""
    trace: VerifierTrace | None = observation.trace if observation is not None else None
    if trace is None:
        return []
    base, modes, links = oracle_state(effect)
    work = {c.path for c in effect.changes}
    by_program: dict[tuple[str, bool], list[TracedRun]] = {}
    for run in trace.executed():
        found = _program(run, work) if run.exit is not None and runs_the_work(run, work) else None
        if found is not None and base.get(found[0]) is not None:
            by_program.setdefault(found, []).append(run)
    out: list[Mutant] = []
    for (path, python), runs in by_program.items():
        outputs = output_positions(trace, runs, python)
        for kind, printed, how in (
            (MORE, _more(runs), "printing every line it printed in any run, for every run"),
            (LESS, _less(runs, 2 if python else 1), "printing what it printed without its first line"),
        ):
            if printed is None or len(out) >= MAX_OUTPUT_MUTANTS:
                continue
            program = printing_program(runs, printed, python=python, outputs=outputs)
            writes = {**base, path: program.encode("utf-8")}
            out.append(
                Mutant(
                    name=f"{kind}:{path.lstrip('/')}",
                    kind=MutantKind.OUTPUT,
                    description=f"the oracle's result with {path} {how} (what the verifier's run recorded), "
                    "without doing the work",
                    targets=[path],
                    writes=writes,
                    modes={p: m for p, m in modes.items() if writes.get(p) is not None},
                    links=links,
                )
            )
    return out
