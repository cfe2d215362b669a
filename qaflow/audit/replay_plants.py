"""Record and replay: plants derived from the verifier's traced run (`qaflow.audit.trace`), not from a list of tricks.

The observed run is the oracle's verified one: what the verifier executed, printed and exited with, what
it looked for and did not find, what it appended to. Every edge of it that the agent can create or
change becomes a plant that replays the verifier's recorded success into a wrong state, in any language:

- `program`: a name the verifier ran that a lookup tried first at an agent-creatable place (a folder on
  PATH before the real one: `stat`/`execve` ENOENT there), or a task-owned program it ran that the agent
  can replace and the reference solution left alone: a shim that prints what that program printed for
  the same arguments and exits as it did (any other arguments run the real program);
- `shell`: a file a shell of the verifier read or looked for (sourced settings, start-up files of login
  and `BASH_ENV` shells) that the agent can create or change: it puts a folder of such program shims
  first on PATH and, read by the verifier's own shell (test.sh), replays that shell's verdict: its
  recorded output, full reward in the reward files it wrote, its exit (`verdict_block`);
- `python`: a folder a Python of the verifier searched (sys.path entries, site folders, found or not)
  that the agent can create or write: a shadow of every module that Python loaded from a later place,
  a `sitecustomize.py`, and a `.pth` in site folders, each a forger that, in a Python started with the
  arguments of one the verifier ran, prints what that one printed and exits as it did (and otherwise
  loads the real module);
- `scratch`: a file the verifier appended to (or wrote without truncating) at an agent-creatable place,
  pre-seeded with what it held after the oracle's verified run;
- `input`: a file the verifier only read that the agent can change and the reference solution neither
  wrote nor read (an expected output in the agent's folder, a settings file), left empty;
- `pickle`: a pickle of the work a Python of the verifier loaded, replaced by one whose loading replays
  that Python's verdict (data deserialised this way is code the verifier runs);
- `spoof` (a sink of its own, `SPOOF_SINK`): each program of the work the verifier ran, printing the
  verifier's own recorded verdict lines (never a line the work printed) and exiting as it did.

What is replayed is the verifier's verdict, never the answer: a run of the work itself (the program, or
the script or module an interpreter runs, that the reference solution wrote) is never replayed, and
the plants never touch a path the reference solution wrote except as wrong solutions (the wrong state,
a forger pickle, a spoofing program).

The wrong state is the work left empty (every file the reference solution wrote exists and holds
nothing; a program of it the verifier ran prints nothing and keeps only its recorded exit statuses).
All plants run at once on it (`KITCHEN_SINK`), beside that wrong state alone (`WRONG_STATE`); only when the
sink gets full reward where the wrong state alone and the nop do not are the plants minimised
(`qaflow.audit.minimise`, by plant group) to those that still do: `reward_tamper`, with the minimal plants and
`qaflow run TASK --agent exploit:replay` to replay them. Home folders count only for a shell's start-up files
and for the folders the task's Dockerfile puts on PATH there (`ENV PATH=/root/.local/bin:$PATH`: a lookup
there); a program or module there, and system folders, are the harness note's.
"""

from __future__ import annotations

import base64
import os
import pickle
import posixpath
import re
import shlex
from collections.abc import Iterable

from qaflow.audit.exploits import Exploit, Plant
from qaflow.audit.observation import Access, Observation
from qaflow.audit.trace import TracedRun, VerifierTrace

KITCHEN_SINK = "replay"
SPOOF_SINK = "replay-spoof"
SHIM_DIR = "/tmp/.qaflow-replay-bin"
FORGER = "qaflow_replay_forger"
SHELLS = frozenset({"bash", "sh", "dash", "zsh", "ksh", "ash", "busybox"})
MAX_PROGRAMS = 40
MAX_MODULES = 30
MAX_FORGED_BYTES = 8192
MAX_FOLDERS = 6
MAX_VARIANTS = 12


def is_python(run: TracedRun) -> bool:
    return posixpath.basename(run.exe).startswith("python")


def python_readers(trace: VerifierTrace) -> dict[str, list[TracedRun]]:
    """Each path the verifier's finished Pythons read, with those Pythons in the order they first read it."""
    pythons = {r.pid: r for r in trace.executed() if is_python(r) and r.exit is not None}
    found: dict[str, dict[int, TracedRun]] = {}
    for e in trace.events:
        if e.reads and e.pid in pythons:
            found.setdefault(e.path, {})[e.pid] = pythons[e.pid]
    return {path: list(runs.values()) for path, runs in found.items()}


def _b64(text: str) -> str:
    return base64.b64encode(text.encode("utf-8", "surrogateescape")).decode("ascii")


def program_shim(runs: list[TracedRun], real: str | None, *, skip: int = 1) -> str:
    """A sh script that, for the arguments of one of `runs`, prints its stdout (and stderr) and exits as it did; else
    runs `real` (or, with none left to run, exits as the last of `runs` did). `skip`: the words of a run's argv
    before its arguments (1, the program; 2 for a script a shell runs: the shell and the script)."""
    lines = ["#!/bin/sh", "u=$(printf '\\037'); k=; for a; do k=$k$a$u; done"]
    seen: set[str] = set()
    for run in runs[-MAX_VARIANTS:]:
        key = "".join(f"{a}\x1f" for a in run.argv[skip:])
        if key in seen or "\n" in key:
            continue
        seen.add(key)
        code = min(max(run.exit or 0, 0), 255)
        out = f"printf %s {_b64(run.stdout)} | base64 -d"
        if run.stderr:
            out += f"; printf %s {_b64(run.stderr)} | base64 -d >&2"
        lines.append(f'[ "$k" = {shlex.quote(key)} ] && {{ {out}; exit {code}; }}')
    if real:
        lines.append(f'exec {shlex.quote(real)} "$@"')
    else:
        lines.append(f"exit {min(max(runs[-1].exit or 0, 0), 255)}")
    return "\n".join(lines) + "\n"


def verdict_code(runs: list[TracedRun], *, stdout: bool = True) -> str:
    """Python that, run in a Python started with the arguments of one of `runs`, prints what that one printed
    and exits as it did; anywhere else it does nothing. It imports only `sys` (and `posix` through it).
    Without `stdout`, only its stderr is replayed."""
    table = {
        "\x1f".join(r.argv[1:]): (
            r.stdout.encode("utf-8", "surrogateescape")[-MAX_FORGED_BYTES:] if stdout else b"",
            min(max(r.exit or 0, 0), 255),
            r.stderr.encode("utf-8", "surrogateescape")[-MAX_FORGED_BYTES:],
        )
        for r in runs[-MAX_VARIANTS:]
    }
    return f"""import sys as _sys
_T = {table!r}
_k = "\\x1f".join(getattr(_sys, "orig_argv", _sys.argv)[1:])
if _k in _T:
    try:
        _sys.stdout.flush()
        _sys.stdout.buffer.write(_T[_k][0])
        _sys.stdout.flush()
        _sys.stderr.flush()
        _sys.stderr.buffer.write(_T[_k][2])
        _sys.stderr.flush()
    except Exception:
        pass
    _sys.modules["posix"]._exit(_T[_k][1])
"""


class _Reduce:
    def __init__(self, code: str):
        self.code = code

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (exec, (self.code,))


def forger_pickle(runs: list[TracedRun]) -> bytes:
    """A pickle that, loaded by a Python started with the arguments of one of `runs`, replays its verdict
    (`verdict_code`): data the verifier deserialises this way is code it runs."""
    return pickle.dumps(_Reduce(verdict_code(runs)), protocol=2)


def pickle_plants(trace: VerifierTrace, pickles: Iterable[str]) -> list[Plant]:
    """Each pickle of the work that a Python of the verifier read, replaced by `forger_pickle` of that Python."""
    readers = python_readers(trace)
    plants = []
    for path in pickles:
        runs = readers.get(path, [])
        if runs:
            data = base64.b64encode(forger_pickle(runs)).decode("ascii")
            q = shlex.quote(path)
            plants.append(Plant(path=path, content="", command=f"printf %s {data} | base64 -d > {q}",
                                why="a pickle of the work the verifier loaded, replaying its verdict",
                                group=f"pickle:{path}"))  # fmt: skip
    return plants


def forger_module(runs: list[TracedRun]) -> str:
    """A Python module that, imported by a Python started with the arguments of one of `runs`, prints what
    that one printed and exits as it did; imported anywhere else, it becomes the real module of its name.
    It imports nothing a shadow could stand for (only `sys` and the import system's frozen modules)."""
    return f"""{verdict_code(runs)}if __name__ not in ("{FORGER}", "sitecustomize", "usercustomize"):
    _bs = _sys.modules["_frozen_importlib"]
    _ext = _sys.modules["_frozen_importlib_external"]
    _here = __file__.rsplit("/", 1)[0]
    _cwd = _sys.modules["posix"].getcwd()
    _path = [p for p in _sys.path if (p if p.startswith("/") else _cwd + "/" + p).rstrip("/.") != _here]
    _spec = _ext.PathFinder.find_spec(__name__, _path)
    if _spec is not None:
        _real = _bs.module_from_spec(_spec)
        _sys.modules[__name__] = _real
        _spec.loader.exec_module(_real)
        globals().update(_real.__dict__)
"""


def _access(obs: Observation, path: str) -> Access | None:
    return obs.trace_access.get(path)


def _can_plant(obs: Observation, path: str, work: set[str], *, home: bool = False) -> bool:
    """The agent user can create or replace `path`, a task-owned file (or, with `home`, one in a home folder:
    a start-up file of a shell the verifier started) the reference solution did not write."""
    a = _access(obs, path)
    if a is None or path in work or path.startswith(("/tests/", "/logs/", "/solution/", "/proc/")):
        return False
    if a.owner != "task" and not (home and path.startswith(("/root/", "/home/"))):
        return False
    return (a.exists and a.writable and not a.is_dir) or (not a.exists and a.creatable)


def _can_write_dir(obs: Observation, path: str) -> bool:
    a = _access(obs, path)
    if a is None or a.owner != "task" or path.startswith(("/tests", "/logs", "/solution")):
        return False
    return (a.exists and a.is_dir and a.writable) or (not a.exists and a.creatable)


INTERPRETERS = ("python", "bash", "sh", "dash", "zsh", "node", "perl", "ruby", "php", "Rscript", "java")


def runs_the_work(run: TracedRun, work: set[str]) -> bool:
    """The run executes a program the reference solution wrote (as the program, or the script or module an
    interpreter runs): its output is the answer, which an agent does not have, so it is never replayed.
    A program that only reads the work (`diff out.txt expected.txt`) prints a verdict, and is replayed."""
    if run.exe in work:
        return True
    if not posixpath.basename(run.exe).startswith(INTERPRETERS):
        return False
    names = {posixpath.basename(w) for w in work}
    stems = {posixpath.splitext(n)[0] for n in names}
    args = run.argv[1:]
    for i, arg in enumerate(args):
        if arg == "-m":
            return i + 1 < len(args) and args[i + 1].split(".")[0] in stems
        if arg == "-c":
            return i + 1 < len(args) and _code_mentions_work(args[i + 1], work)
        if not arg.startswith("-"):
            return arg in work or posixpath.basename(arg) in names
    return False


CODE_SUFFIXES = (".py", ".sh", ".bash", ".js", ".mjs", ".cjs", ".ts", ".rb", ".pl", ".php", ".lua", ".R", ".jar")
"""Files of the work that are code: inline code that names one (by path, or a Python module by name) runs it."""


def _code_mentions_work(code: str, work: set[str]) -> bool:
    """Whether inline code (`-c CODE`) loads a program or module the reference solution wrote: by its path, or
    (Python) by importing its module name. A check that only reads the work's data files is not running it."""
    programs = [w for w in work if w.endswith(CODE_SUFFIXES)]
    if any(w in code for w in programs):
        return True
    modules = {posixpath.splitext(posixpath.basename(w))[0] for w in programs if w.endswith(".py")}
    imported = set(re.findall(r"(?:^|[\s;])(?:from|import)\s+([A-Za-z_][A-Za-z0-9_]*)", code))
    return bool(modules & imported)


def script_of(run: TracedRun) -> str | None:
    """The script an interpreter run runs (its first argument that is not an option); None otherwise."""
    if not posixpath.basename(run.exe).startswith(INTERPRETERS):
        return None
    return next((a for a in run.argv[1:] if not a.startswith("-")), None)


def _by_name(trace: VerifierTrace, work: set[str]) -> dict[str, list[TracedRun]]:
    runs: dict[str, list[TracedRun]] = {}
    for run in trace.executed():
        if run.exit is not None and not runs_the_work(run, work):
            runs.setdefault(run.name, []).append(run)
    return runs


def program_plants(obs: Observation, trace: VerifierTrace, work: set[str]) -> list[Plant]:
    by_name = _by_name(trace, work)
    plants: list[Plant] = []
    for e in trace.missing():
        name = posixpath.basename(e.path)
        runs = by_name.get(name)
        if e.op not in ("stat", "exec") or not runs or name in SHELLS or not _can_plant(obs, e.path, work):
            continue
        real = runs[-1].exe if runs[-1].exe != e.path else None
        plants.append(
            Plant(
                path=e.path, content=program_shim(runs, real), why=f"looked up before {real}", group=f"program:{e.path}"
            )
        )
    for run in trace.executed():
        path = run.exe
        if path in work or not _can_plant(obs, path, work) or not _access(obs, path) or run.name in SHELLS:
            continue
        if path.startswith(("/root/", "/home/")):
            continue  # a program installed there is the toolchain's (`pip install --user`): only lookups count
        if any(p.path == path for p in plants):
            continue
        same = [r for r in trace.executed() if r.exe == path and r.exit is not None and not runs_the_work(r, work)]
        if same:
            plants.append(Plant(path=path, content=program_shim(same, None), why="a program the verifier ran",
                                group=f"program:{path}"))  # fmt: skip
    plants += [p for p in script_plants(obs, trace, work) if not any(q.path == p.path for q in plants)]
    unique = {p.path: p for p in plants}
    return list(unique.values())[:MAX_PROGRAMS]


def script_plants(obs: Observation, trace: VerifierTrace, work: set[str]) -> list[Plant]:
    """Each script a shell or Python of the verifier ran (`bash helper.sh`, `python3 check.py`) that the agent can
    replace and the reference solution left alone: a script in the same language that prints what that run printed
    for the same arguments and exits as it did. The interpreter is the system's; the program is the agent's."""
    scripts: dict[str, list[TracedRun]] = {}
    for run in trace.executed():
        script = _script_arg(run)
        if script is None or run.exit is None or runs_the_work(run, work) or script in work:
            continue
        shell = posixpath.basename(run.exe) in SHELLS
        if (shell or is_python(run)) and script.startswith("/") and _can_plant(obs, script, work):
            scripts.setdefault(script, []).append(run)
    plants = []
    for script, runs in scripts.items():
        python = is_python(runs[0])
        content = verdict_code(runs) if python else program_shim(runs, None, skip=2)
        plants.append(Plant(path=script, content=content, why="a script the verifier ran", group=f"program:{script}"))
    return plants


REWARD_FILES = {"/logs/verifier/reward.txt": "1", "/logs/verifier/reward.json": '{"reward": 1.0}'}
"""The verifier's reward files, each with what full reward reads as there."""


def _verifier_shell(trace: VerifierTrace) -> TracedRun | None:
    """The verifier's own shell (test.sh), when the first program of the run is a shell."""
    first = next(iter(trace.executed()), None)
    return first if first is not None and posixpath.basename(first.exe) in SHELLS else None


def verdict_block(top: TracedRun, trace: VerifierTrace) -> str:
    """Shell code that, run inside the verifier's own shell (a file it sources, or its `BASH_ENV`), replays
    that shell's recorded verdict: what it printed, full reward in the reward files it wrote, its exit."""
    script = script_of(top) or (top.argv[0] if top.argv else top.exe)
    written = [p for p in trace.written() if p in REWARD_FILES] or ["/logs/verifier/reward.txt"]
    rewards = "; ".join(f"printf '%s\\n' {shlex.quote(REWARD_FILES[p])} > {p}" for p in written)
    code = min(max(top.exit or 0, 0), 255)
    return (
        f'if [ "$0" = {shlex.quote(script)} ]; then printf %s {_b64(top.stdout)} | base64 -d; '
        f"printf %s {_b64(top.stderr)} | base64 -d >&2; "
        f"{rewards}; exit {code}; fi\n"
    )


def shell_plants(obs: Observation, trace: VerifierTrace, work: set[str]) -> list[Plant]:
    """Files a shell of the verifier read or looked for, made to put replay shims of every program first on PATH."""
    shells = {r.pid for r in trace.runs if posixpath.basename(r.exe) in SHELLS}
    read_by_shell = [e for e in trace.events if e.pid in shells and e.op == "open" and (e.reads or e.missing)]
    targets = list(dict.fromkeys(e.path for e in read_by_shell if _can_plant(obs, e.path, work, home=True)))
    executed = {r.exe for r in trace.executed()}
    targets = [t for t in targets if t not in executed][:MAX_FOLDERS]
    if not targets:
        return []
    shims = [
        Plant(path=f"{SHIM_DIR}/{name}", content=program_shim(runs, runs[-1].exe), why="replays a program", group="")
        for name, runs in _by_name(trace, work).items()
        if name not in SHELLS and "/" not in name
    ][:MAX_PROGRAMS]
    path_block = f"PATH={SHIM_DIR}:$PATH; export PATH; hash -r 2>/dev/null\n"
    top = _verifier_shell(trace)
    by_top = {e.path for e in read_by_shell if top is not None and e.pid == top.pid}
    plants: list[Plant] = []
    for path in targets:
        group = f"shell:{path}"
        block = (verdict_block(top, trace) if top is not None and path in by_top else "") + path_block
        exists = bool((a := _access(obs, path)) and a.exists)
        if exists:
            q = shlex.quote(path)
            cmd = (
                f"{{ printf %s {shlex.quote(block)}; cat {q}; }} > {q}.qaflow && cat {q}.qaflow > {q}; rm -f {q}.qaflow"
            )
            plants.append(
                Plant(path=path, content="", command=cmd, why="a file the verifier's shell read", group=group)
            )
        else:
            plants.append(Plant(path=path, content=block, why="a file the verifier's shell looked for", group=group))
        plants += [s.model_copy(update={"group": group}) for s in shims]
    return plants


STARTUP_MODULES = frozenset(
    [
        "encodings",
        "codecs",
        "io",
        "abc",
        "site",
        "os",
        "stat",
        "posixpath",
        "genericpath",
        "_collections_abc",
        "_sitebuiltins",
        "aliases",
        "utf_8",
        "latin_1",
        "ascii",
        "_distutils_hack",
        "sitecustomize",
        "usercustomize",
        "_virtualenv",
    ]
)
"""Imported while Python starts, before the script's folder or the cwd is on sys.path: a shadow of one
there is never loaded, and one on PYTHONPATH stops every Python from starting."""


def _module_names(trace: VerifierTrace, pythons: set[int], scripts: set[str]) -> dict[str, str]:
    """Top-level module name -> the folder it was loaded from, for modules the verifier's Pythons opened:
    those opened after a process opened its main script first (what the verifier's own code imported),
    at most `MAX_MODULES`."""
    early: dict[str, str] = {}
    late: dict[str, str] = {}
    started: set[int] = set()
    for e in trace.events:
        if e.pid not in pythons or e.op != "open" or e.failed:
            continue
        if e.path in scripts:
            started.add(e.pid)
            continue
        folder, base = posixpath.split(e.path)
        if posixpath.basename(folder) == "__pycache__":
            folder, base = posixpath.dirname(folder), base.split(".", 1)[0] + ".py"
        if base == "__init__.py":
            folder, base = posixpath.split(folder)
            name = base
        elif base.endswith((".py", ".so")):
            name = base.split(".", 1)[0]
        else:
            continue
        if name.isidentifier() and name not in STARTUP_MODULES and name not in early and name not in late:
            (late if e.pid in started else early)[name] = folder
    ordered = {**late, **early}
    return dict(list(ordered.items())[:MAX_MODULES])


def python_plants(obs: Observation, trace: VerifierTrace, work: set[str]) -> list[Plant]:
    every = [r for r in trace.executed() if is_python(r) and r.exit is not None]
    runs = [r for r in every if not runs_the_work(r, work)]
    if not runs:
        return []
    pythons = {r.pid for r in every}
    searched = [
        e.path
        for e in trace.events
        if e.pid in pythons and e.op in ("stat", "open") and _can_write_dir(obs, e.path)
        and ((e.op == "open" and (e.flags or 0) & 0o200000) or e.op == "stat")
    ]  # fmt: skip
    programs = {e.path for e in trace.events if e.op == "exec"} | {posixpath.basename(r.exe) for r in trace.runs}
    programs |= {r.name for r in trace.runs}
    folders = [f for f in dict.fromkeys(searched) if f not in work and f not in programs]
    folders = [f for f in folders if posixpath.basename(f) not in programs]
    folders = [f for f in folders if not posixpath.splitext(f)[1] or f.endswith("-packages")][:MAX_FOLDERS]
    modules = _module_names(trace, pythons, scripts={a for r in runs for a in r.argv[1:2]})
    forger = forger_module(runs)
    plants: list[Plant] = []
    for folder in folders:
        for name, source in modules.items():
            path = f"{folder}/{name}.py"
            if source == folder or path in work:
                continue
            plants.append(Plant(path=path, content=forger, why=f"shadows {source}/{name}", group=f"python:{path}"))
        for name in ("sitecustomize", "usercustomize"):
            path = f"{folder}/{name}.py"
            plants.append(Plant(path=path, content=forger, why="run at Python's start-up", group=f"python:{path}"))
        if folder.endswith(("site-packages", "dist-packages")):
            group = f"python:{folder}/{FORGER}.pth"
            plants.append(Plant(path=f"{folder}/{FORGER}.py", content=forger, why="a .pth's module", group=group))
            plants.append(Plant(path=f"{folder}/{FORGER}.pth", content=f"import {FORGER}\n", why="a .pth", group=group))
    return plants


def scratch_plants(obs: Observation, work: set[str]) -> list[Plant]:
    plants = []
    for path, text in obs.kept.items():
        if path in work or not _can_plant(obs, path, work):
            continue
        q = shlex.quote(path)
        cmd = f"mkdir -p {shlex.quote(posixpath.dirname(path))}; printf %s {shlex.quote(text)} > {q}; chmod a+rw {q}"
        plants.append(
            Plant(path=path, content="", command=cmd, why="what the verifier's run left there", group=f"scratch:{path}")
        )
    return plants


def link_plants(obs: Observation, trace: VerifierTrace, work: set[str]) -> list[Plant]:
    """Files the verifier wrote afresh (created or truncated) at places the agent can create first, two or more in
    one folder: all but the first made symlinks to the first, so every write lands in one file and whatever the
    verifier compares among them is the same file."""
    fresh = {e.path for e in trace.events if e.writes and (e.flags or 0) & (os.O_CREAT | os.O_TRUNC) and not e.appends}
    by_folder: dict[str, list[str]] = {}
    for path in trace.written():
        if path not in fresh or path in work or "/__pycache__/" in path or path.endswith(".pyc"):
            continue
        if _can_plant(obs, path, work):
            by_folder.setdefault(posixpath.dirname(path), []).append(path)
    plants = []
    for folder, paths in by_folder.items():
        first, *rest = paths
        for path in rest[:MAX_VARIANTS]:
            why = f"a file the verifier writes, made one with {posixpath.basename(first)}"
            plants.append(Plant(path=path, content="", link_to=posixpath.basename(first), why=why,
                                group=f"links:{folder}"))  # fmt: skip
    return plants


WRONG_STATE = "replay-control"
WORK_GROUP = "wrong-state"


def exit_stub(runs: list[TracedRun], *, python: bool, prints: str = "", outputs: Iterable[int] = ()) -> str:
    """A program of the work that prints nothing and, for the arguments of one of `runs`, exits as it did
    (else as the last did): a wrong solution that keeps only the exit statuses, so a verifier that also
    checks an exit status (a refused bad input) reaches the checks of the output. `python`: for a script
    an interpreter runs (`python3 prog.py ARGS`, or by its `#!` line), else a sh program; `prints`: what
    it prints instead of nothing; `outputs`: the positions (0 the first argument) of arguments that name a
    file the program wrote, which it creates empty (a wrong answer in the right place)."""
    table = {"".join(f"{a}\x1f" for a in r.argv[2 if python else 1 :]): min(max(r.exit or 0, 0), 255) for r in runs}
    default = min(max(runs[-1].exit or 0, 0), 255)
    positions = sorted(set(outputs))
    if python:
        say = f"sys.stdout.write({prints!r})\nsys.stdout.flush()\n" if prints else ""
        make = (
            f"for _i in {positions!r}:\n    try:\n        open(sys.argv[1 + _i], 'w').close()\n"
            "    except (IndexError, OSError):\n        pass\n"
        ) if positions else ""  # fmt: skip
        leave = f"sys.exit({table!r}.get(''.join(a + chr(31) for a in sys.argv[1:]), {default}))"
        return f"#!/usr/bin/env python3\nimport sys\n{say}{make}{leave}\n"
    lines = ["#!/bin/sh", "u=$(printf '\\037'); k=; for a; do k=$k$a$u; done"]
    for i in positions:
        lines.append(f'[ "$#" -gt {i} ] && : > "${{{i + 1}}}" 2>/dev/null')
    if prints:
        lines.append(f"printf %s {_b64(prints)} | base64 -d")
    for key, code in list(table.items())[-MAX_VARIANTS:]:
        if "\n" not in key:
            lines.append(f'[ "$k" = {shlex.quote(key)} ] && exit {code}')
    return "\n".join([*lines, f"exit {default}"]) + "\n"


def output_positions(trace: VerifierTrace | None, runs: list[TracedRun], python: bool) -> list[int]:
    """Positions (0 the first argument) of the arguments of `runs` that name a file that run wrote."""
    if trace is None:
        return []
    skip = 2 if python else 1
    found: set[int] = set()
    for run in runs:
        wrote = {e.path for e in trace.events if e.pid == run.pid and e.writes}
        found |= {i for i, arg in enumerate(run.argv[skip:]) if arg in wrote}
    return sorted(found)


def _work_runs(trace: VerifierTrace | None, path: str) -> tuple[list[TracedRun], bool]:
    """The verifier's runs of the work's program `path`, and whether a Python interpreter ran it as a script."""
    if trace is None:
        return [], False
    direct = [r for r in trace.executed() if r.exe == path and r.exit is not None]
    if direct:
        return direct, False
    scripted = [r for r in trace.executed() if r.exit is not None and is_python(r) and _script_arg(r) == path]
    return scripted, True


def _script_arg(run: TracedRun) -> str | None:
    """The script a Python run runs when it is its first argument (`python3 prog.py ARGS`, no options)."""
    return run.argv[1] if len(run.argv) > 1 and not run.argv[1].startswith("-") else None


def verdict_lines(trace: VerifierTrace, work: set[str]) -> str:
    """What the verifier's own programs printed in the recorded run, every line the work printed left out:
    its verdict, never the answer (a runner that echoes the work's output echoes the answer too)."""
    answers = {ln for r in trace.executed() if runs_the_work(r, work) for ln in r.stdout.splitlines()}
    lines = [
        ln
        for r in trace.executed()
        if not runs_the_work(r, work)
        for ln in r.stdout.splitlines()
        if ln.strip() and ln not in answers
    ]
    text = "".join(f"{ln}\n" for ln in dict.fromkeys(lines))
    return text[-MAX_FORGED_BYTES:]


def spoof_plants(trace: VerifierTrace, files: list[str]) -> list[Plant]:
    """Each program of the work the verifier ran, printing the verifier's own recorded verdict lines
    (`verdict_lines`) and exiting as it did: a verifier that reads its verdict from output the work's
    output is mixed into (a log it greps) takes the work's word for it. And each Python module of the
    work a Python of the verifier imported, as a module that replays that Python's stderr (a test
    framework's summary: unittest's report) and exit status at import: the agent's code runs inside
    the verifier's process. Its stdout is left out: a checker that imports the work may print the
    work's results there, which are the answer."""
    plants = import_forgers(trace, files)
    prints = verdict_lines(trace, set(files))
    if not prints:
        return plants
    for path in files:
        runs, python = _work_runs(trace, path)
        if runs:
            content = exit_stub(runs, python=python, prints=prints, outputs=output_positions(trace, runs, python))
            why = "the work, printing the verifier's recorded verdict"
            plants.append(Plant(path=path, content=content, why=why, group=f"spoof:{path}"))
    return plants[:MAX_PROGRAMS]


def import_forgers(trace: VerifierTrace, files: list[str]) -> list[Plant]:
    """`spoof_plants`' forgers of the work's Python modules the verifier's Pythons imported (not ran as scripts)."""
    readers = python_readers(trace)
    plants = []
    for path in (f for f in files if f.endswith(".py")):
        runs = [r for r in readers.get(path, []) if script_of(r) != path]
        if runs and any(r.stderr for r in runs):
            why = "the work's module, replaying the verifier's Python at import"
            plants.append(Plant(path=path, content=verdict_code(runs, stdout=False), why=why, group=f"spoof:{path}"))
    return plants


def wrong_state(work: Iterable[str], trace: VerifierTrace | None = None) -> list[Plant]:
    """The work left empty: every file the reference solution wrote exists, holding nothing (an empty
    program runs and prints nothing), so a verifier that needs the work to exist reaches its checks. A
    program of the work the verifier ran keeps only its exit statuses (`exit_stub`)."""
    plants = []
    for path in sorted(work):
        if path.startswith(("/tmp/", "/logs/", "/tests/")):
            continue
        runs, python = _work_runs(trace, path)
        content = exit_stub(runs, python=python, outputs=output_positions(trace, runs, python)) if runs else ""
        why = "the work, printing nothing, exiting as it did" if runs else "the work, left empty (a wrong solution)"
        plants.append(Plant(path=path, content=content, why=why, group=WORK_GROUP))
    return plants[:MAX_PROGRAMS]


def input_plants(obs: Observation, trace: VerifierTrace, work: set[str]) -> list[Plant]:
    """Files the verifier only read, that the agent can change and the reference solution neither wrote nor
    read (an expected output, a settings file: the verifier's references, not the task's input data),
    left empty: a verifier that compares the work with them compares two empty things."""
    executed = {r.exe for r in trace.executed()} | {script_of(r) for r in trace.executed()}
    written = set(trace.written()) | set(obs.oracle_reads)  # the solution's inputs are the task's data
    plants = []
    for path in trace.read():
        a = _access(obs, path)
        if a is None or not a.exists or a.is_dir or path in executed or path in written or path in work:
            continue
        if _can_plant(obs, path, work) and not path.endswith((".py", ".pyc", ".so", ".sh")):
            q = shlex.quote(path)
            plants.append(Plant(path=path, content="", command=f": > {q}", why="an input the verifier read, emptied",
                                group=f"input:{path}"))  # fmt: skip
    return plants[:MAX_PROGRAMS]


def plan_replay(
    obs: Observation, work: Iterable[str], files: Iterable[str] = (), pickles: Iterable[str] = ()
) -> list[Exploit]:
    """The kitchen sink: every replay plant of the observed trace at once, on the work left empty (its
    control, the wrong state alone, is the plants of `WORK_GROUP`), and beside it the spoofing sink (the work's
    programs printing the verifier's verdict, `spoof_plants`, on the same wrong state); none without a trace
    or plants.
    `work`: every path the reference solution changed (never planted); `files`: the regular files among
    them (the wrong state empties them); `pickles`: those that are pickles (a forger pickle replaces them)."""
    trace = obs.trace
    if trace is None or not obs.observed:
        return []
    done, files = set(work), list(files)
    plants = (
        program_plants(obs, trace, done)
        + shell_plants(obs, trace, done)
        + python_plants(obs, trace, done)
        + scratch_plants(obs, done)
        + link_plants(obs, trace, done)
    )
    plants += pickle_plants(trace, pickles)
    planted = {p.path for p in plants}
    plants += [p for p in input_plants(obs, trace, done) if p.path not in planted]  # a sourced file is code
    wrong, spoofs = wrong_state(files, trace), spoof_plants(trace, files)
    sinks = [Exploit(name=KITCHEN_SINK, plants=[*wrong, *plants])] if plants else []
    # apart: the work printing anything breaks the sink's "two empty things compare equal"
    return sinks + ([Exploit(name=SPOOF_SINK, plants=[*wrong, *spoofs])] if spoofs else [])
