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
  that everything asked is there) passes a program that leaves answers out;
- `wrong-values`: every run prints, and writes into the files its arguments name, what the work did for the
  same arguments with every digit changed (where there were digits): a verifier that checks the shape of the
  output (a title, a row count) and none of its figures passes a program that gets every figure wrong.

Arguments that name a file the run wrote (a fresh temporary path each time) are left out of what identifies a
run; such files are created empty unless the mutant writes them, and exit statuses are kept. Full reward for
such a mutant, where the nop fails, is `weak_verifier`, as for any mutant.
"""

from __future__ import annotations

import posixpath
import shlex
from dataclasses import dataclass

from qaflow.audit.mutants.base import Mutant, MutantKind, oracle_state
from qaflow.audit.observation import Observation
from qaflow.audit.trace import SHELLS, TracedRun, VerifierTrace, is_python, output_positions, runs_the_work, script_of
from qaflow.trial.effects import Effect

MAX_OUTPUT_MUTANTS = 3
MAX_PRINTED = 16384
MORE = "more-than-asked"
LESS = "less-than-asked"
VALUES = "wrong-values"
_SHIFT = str.maketrans("0123456789", "1234567890")


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


@dataclass(frozen=True)
class Recorded:
    """One run of the work's program as the trace and the observation kept it."""

    key: str
    """Its arguments joined by \\x1f, those naming a file it wrote left empty."""
    stdout: str
    files: dict[int, str]
    """What the files its arguments name (by position) held after the run, where they were kept."""
    exit: int


def recorded_runs(runs: list[TracedRun], python: bool, outputs: list[int], texts: dict[str, str]) -> list[Recorded]:
    skip = 2 if python else 1
    found = []
    for r in runs:
        args = r.argv[skip:]
        key = "\x1f".join("" if i in outputs else a for i, a in enumerate(args))
        files = {i: texts[args[i]] for i in outputs if i < len(args) and args[i] in texts}
        found.append(Recorded(key, r.stdout, files, min(max(r.exit or 0, 0), 255)))
    return found


def printing_program(
    recorded: list[Recorded],
    printed: dict[str, str],
    *,
    python: bool,
    outputs: list[int],
    written: dict[str, dict[int, str]] | None = None,
) -> str:
    """A program that, for the arguments of one of the `recorded` runs (its key), prints `printed[key]`
    (`printed[""]` for any arguments when given), writes `written[key][i]` into the file its argument at position
    `i` names (the other `outputs` it creates empty) and exits as that run did; it reads no input."""
    written = written or {}
    codes = {r.key: r.exit for r in recorded}
    default = recorded[-1].exit
    if python:
        return (
            "#!/usr/bin/env python3\nimport sys\n"
            f"_o = {outputs!r}\n_a = sys.argv[1:]\n"
            "_k = chr(31).join('' if _i in _o else _v for _i, _v in enumerate(_a))\n"
            f"_p = {printed!r}\n_w = {written!r}.get(_k, {{}})\n"
            "for _i in _o:\n    try:\n        open(_a[_i], 'w').write(_w.get(_i, ''))\n"
            "    except (IndexError, OSError):\n        pass\n"
            "sys.stdout.write(_p.get(_k, _p.get('', '')))\nsys.stdout.flush()\n"
            f"sys.exit({codes!r}.get(_k, {default}))\n"
        )
    lines = [
        "#!/bin/sh",
        "u=$(printf '\\037'); k=; n=0",
        'for a; do case " $OUTS " in *" $n "*) a= ;; esac; k=$k$a$u; n=$((n+1)); done',
    ]
    lines[1] = f"OUTS={shlex.quote(' '.join(map(str, outputs)))}; " + lines[1]
    lines += [f'[ "$#" -gt {i} ] && : > "${{{i + 1}}}" 2>/dev/null' for i in outputs]
    every = printed.get("")
    if every is not None:
        lines.append(f"printf '%s' {shlex.quote(every)}")
    for key, text in printed.items():
        if key and "\n" not in key:
            lines.append(f'[ "$k" = {shlex.quote(key + chr(31))} ] && printf %s {shlex.quote(text)}')
    for key, files in written.items():
        for i, text in files.items():
            if "\n" not in key:
                lines.append(f'[ "$k" = {shlex.quote(key + chr(31) if key or outputs else "")} ] && '
                             f'printf %s {shlex.quote(text)} > "${{{i + 1}}}"')  # fmt: skip
    for key, code in codes.items():
        if "\n" not in key:
            lines.append(f'[ "$k" = {shlex.quote(key + chr(31) if key or outputs else "")} ] && exit {code}')
    return "\n".join([*lines, f"exit {default}"]) + "\n"


Change = tuple[dict[str, str], dict[str, dict[int, str]]]
"""What a mutant prints per run key, and what it writes into argument-named files per run key."""


def _more(recorded: list[Recorded]) -> Change | None:
    outputs = {"\n".join(_lines(r.stdout)) for r in recorded}
    if len(outputs) < 2:
        return None
    every = list(dict.fromkeys(ln for r in recorded for ln in _lines(r.stdout)))
    text = "".join(f"{ln}\n" for ln in every)
    return ({"": text}, {}) if len(text) <= MAX_PRINTED else None


def unique_keys(recorded: list[Recorded]) -> bool:
    """Whether each run has arguments of its own (else which is which is unknown: input read elsewhere), and a run
    without arguments does not stand for every run."""
    keys = [r.key for r in recorded]
    return len(set(keys)) == len(keys) and not ("" in keys and len(keys) > 1)


def _less(recorded: list[Recorded]) -> Change | None:
    if not unique_keys(recorded) or not any(len(_lines(r.stdout)) >= 2 for r in recorded):
        return None
    printed = {r.key: "".join(f"{ln}\n" for ln in _lines(r.stdout)[1:]) for r in recorded}
    return (printed, {}) if sum(map(len, printed.values())) <= MAX_PRINTED else None


def _values(recorded: list[Recorded]) -> Change | None:
    texts = [r.stdout for r in recorded] + [t for r in recorded for t in r.files.values()]
    if not unique_keys(recorded) or not any(ch.isdigit() for t in texts for ch in t):
        return None
    printed = {r.key: r.stdout.translate(_SHIFT) for r in recorded}
    written = {r.key: {i: t.translate(_SHIFT) for i, t in r.files.items()} for r in recorded if r.files}
    size = sum(map(len, printed.values())) + sum(len(t) for f in written.values() for t in f.values())
    return (printed, written) if size <= MAX_PRINTED * 4 else None


def work_programs(effect: Effect, trace: VerifierTrace) -> dict[tuple[str, bool], list[TracedRun]]:
    """The traced verifier's finished runs of each program of the work it ran (a file the oracle left), by the
    program's path and whether a Python ran it as a script."""
    base, _, _ = oracle_state(effect)
    work = {c.path for c in effect.changes}
    by_program: dict[tuple[str, bool], list[TracedRun]] = {}
    for run in trace.executed():
        found = _program(run, work) if run.exit is not None and runs_the_work(run, work) else None
        if found is not None and base.get(found[0]) is not None:
            by_program.setdefault(found, []).append(run)
    return by_program


def output_mutants(effect: Effect, observation: Observation | None) -> list[Mutant]:
    """Up to `MAX_OUTPUT_MUTANTS` mutants of the work's programs the observed verifier ran and read the output of;
    none where the verifier was not traced."""
    trace: VerifierTrace | None = observation.trace if observation is not None else None
    if observation is None or trace is None:
        return []
    base, modes, links = oracle_state(effect)
    out: list[Mutant] = []
    for (path, python), runs in work_programs(effect, trace).items():
        outputs = output_positions(trace, runs, python)
        recorded = recorded_runs(runs, python, outputs, observation.outputs)
        for kind, change, how in (
            (MORE, _more(recorded), "printing every line it printed in any run, for every run"),
            (LESS, _less(recorded), "printing what it printed without its first line"),
            (VALUES, _values(recorded), "printing and writing what it did with every digit changed"),
        ):
            if change is None or len(out) >= MAX_OUTPUT_MUTANTS:
                continue
            printed, written = change
            program = printing_program(recorded, printed, python=python, outputs=outputs, written=written)
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
