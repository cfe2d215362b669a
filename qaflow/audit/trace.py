"""The verifier's run as the reward guard's tracer saw it: every process, in any language.

The guard's observe mode (`qaflow.trial.guard`, `reward_guard.c`) traces test.sh and every process it
starts at the system-call level: each program executed (and each failed try along PATH), each path
opened, looked up (stat, access) or created, with its result, what each process wrote to its stdout,
and how it exited. This module reads that trace (pure, offline) into `VerifierTrace`: the runs (one
per program a process executed: its argv, stdout and exit status, what the record-and-replay plants
of `qaflow.audit.exploits.replay_plants` replay) and the path events (what the verifier read, wrote, and looked
for without finding: where an agent's file would have been taken).
"""

from __future__ import annotations

import os
import posixpath
import re
from typing import Literal
from urllib.parse import unquote_to_bytes

from pydantic import BaseModel, Field

Op = Literal["open", "stat", "exec", "unlink", "mkdir", "rename"]
MAX_RUNS = 400
MAX_EVENTS = 30000
MAX_STDOUT = 16384
ENOENT = -2
_SKIP = ("/proc/", "/sys/", "/dev/")
_VERIFIER = ("/logs/", "/tests/")


class TracedRun(BaseModel):
    """One program one traced process executed (a process that runs a shell builtin only has its shell's)."""

    pid: int
    parent: int = 0
    exe: str
    argv: list[str] = Field(default_factory=list)
    stdout: str = ""
    stderr: str = ""
    exit: int | None = None

    @property
    def name(self) -> str:
        return posixpath.basename(self.argv[0]) if self.argv else posixpath.basename(self.exe)


class PathEvent(BaseModel):
    """One path a traced process opened, looked up, executed, created or removed, and the result."""

    op: Op
    path: str
    result: int = Field(description="0 (or a descriptor) on success, -errno on failure")
    flags: int | None = Field(None, description="open(2) flags")
    pid: int = 0
    to: str | None = Field(None, description="A rename's destination")

    @property
    def failed(self) -> bool:
        return self.result < 0

    @property
    def missing(self) -> bool:
        return self.result == ENOENT

    @property
    def writes(self) -> bool:
        return self.op == "open" and not self.failed and bool((self.flags or 0) & (os.O_WRONLY | os.O_RDWR))

    @property
    def appends(self) -> bool:
        return self.writes and bool((self.flags or 0) & os.O_APPEND)

    @property
    def lists(self) -> bool:
        """A folder opened to read its entries (a glob, `ls`, `os.scandir`)."""
        return self.op == "open" and not self.failed and bool((self.flags or 0) & os.O_DIRECTORY)

    @property
    def reads(self) -> bool:
        return (
            self.op == "open"
            and not self.failed
            and not (self.flags or 0) & (os.O_WRONLY | os.O_DIRECTORY)
            and not (self.flags or 0) & os.O_CREAT
        )


class VerifierTrace(BaseModel):
    """The verifier's processes and path events, in the order they happened."""

    runs: list[TracedRun] = Field(default_factory=list)
    events: list[PathEvent] = Field(default_factory=list)
    truncated: bool = False

    def run_of(self, pid: int) -> TracedRun | None:
        return next((r for r in reversed(self.runs) if r.pid == pid), None)

    def executed(self) -> list[TracedRun]:
        """Every program run (not the shells' forks that exec'd nothing)."""
        return [r for r in self.runs if r.argv]

    def missing(self) -> list[PathEvent]:
        """Lookups that found nothing (ENOENT): where a file planted first would have been taken."""
        return [e for e in self.events if e.missing and e.op in ("open", "stat", "exec")]

    def written(self) -> list[str]:
        """Paths the verifier created, wrote, appended to or renamed into place, in order."""
        out: dict[str, None] = {}
        for e in self.events:
            if e.writes:
                out[e.path] = None
            elif e.op == "rename" and not e.failed and e.to:
                out[e.to] = None
        return list(out)

    def appended(self) -> list[str]:
        return list(dict.fromkeys(e.path for e in self.events if e.appends))

    def kept(self) -> list[str]:
        """Files written without being truncated first (appends, or writes into what was there), outside the
        verifier's own folders: content planted there before survives into what the verifier reads back."""
        out: dict[str, None] = {}
        for e in self.events:
            if e.writes and not (e.flags or 0) & (os.O_TRUNC | os.O_EXCL) and not e.path.startswith(_VERIFIER):
                out[e.path] = None
        return list(out)

    def taken(self) -> set[str]:
        """Paths the verifier read, ran or looked at (and found), and the folders it read the entries of."""
        return {e.path for e in self.events if not e.failed and not e.writes and e.op in ("open", "stat", "exec")}

    def listed(self) -> list[str]:
        """Folders the verifier read the entries of, in order."""
        return list(dict.fromkeys(e.path for e in self.events if e.lists))

    def read(self) -> list[str]:
        return list(dict.fromkeys(e.path for e in self.events if e.reads))

    def regenerated(self) -> set[str]:
        """Paths the verifier's run removed or wrote afresh (truncated, or renamed into place) before it first read
        them: what it then read was made at verify time, not left by the agent."""
        first: dict[str, bool] = {}
        for e in self.events:
            # O_CREAT alone keeps what a file held (SQLite opens its database so to read it): only a truncation
            fresh = e.writes and bool((e.flags or 0) & os.O_TRUNC) and not e.appends
            if (e.op == "unlink" and not e.failed) or fresh:
                first.setdefault(e.path, True)
            elif e.op == "rename" and not e.failed and e.to:
                first.setdefault(e.to, True)
            elif e.reads:
                first.setdefault(e.path, False)
        return {path for path, made in first.items() if made}


INTERPRETERS = ("python", "bash", "sh", "dash", "zsh", "node", "perl", "ruby", "php", "Rscript", "java")


def is_python(run: TracedRun) -> bool:
    return posixpath.basename(run.exe).startswith("python")


def script_of(run: TracedRun) -> str | None:
    """The script an interpreter run runs (its first argument that is not an option); None otherwise."""
    if not posixpath.basename(run.exe).startswith(INTERPRETERS):
        return None
    return next((a for a in run.argv[1:] if not a.startswith("-")), None)


SHELLS = frozenset({"bash", "sh", "dash", "zsh", "ksh", "ash", "busybox"})


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


def python_readers(trace: VerifierTrace) -> dict[str, list[TracedRun]]:
    """Each path the verifier's finished Pythons read, with those Pythons in the order they first read it."""
    pythons = {r.pid: r for r in trace.executed() if is_python(r) and r.exit is not None}
    found: dict[str, dict[int, TracedRun]] = {}
    for e in trace.events:
        if e.reads and e.pid in pythons:
            found.setdefault(e.path, {})[e.pid] = pythons[e.pid]
    return {path: list(runs.values()) for path, runs in found.items()}


def script_arg(run: TracedRun) -> str | None:
    """The script a Python run runs when it is its first argument (`python3 prog.py ARGS`, no options)."""
    return run.argv[1] if len(run.argv) > 1 and not run.argv[1].startswith("-") else None


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


def _field(text: str) -> str:
    return unquote_to_bytes(text).decode("utf-8", "replace")


def _clean(path: str) -> str:
    return posixpath.normpath(path) if path.startswith("/") else path


def parse_trace(text: str) -> VerifierTrace:
    """The guard's trace lines (`reward_guard.c`, observe mode) as a `VerifierTrace`; unreadable lines skipped."""
    trace = VerifierTrace()
    current: dict[int, TracedRun] = {}
    parents: dict[int, int] = {}
    out: dict[int, bytearray] = {}
    err: dict[int, bytearray] = {}

    def run_for(pid: int) -> TracedRun:
        run = current.get(pid)
        if run is None:  # a fork that has exec'd nothing yet: its parent's program
            parent = current.get(parents.get(pid, 0))
            run = TracedRun(pid=pid, parent=parents.get(pid, 0), exe=parent.exe if parent else "")
            current[pid] = run
            trace.runs.append(run)
        return run

    def close(run: TracedRun) -> None:
        data = out.pop(id(run), None)
        if data is not None:
            run.stdout = bytes(data[:MAX_STDOUT]).decode("utf-8", "replace")
        data = err.pop(id(run), None)
        if data is not None:
            run.stderr = bytes(data[:MAX_STDOUT]).decode("utf-8", "replace")

    for line in text.splitlines():
        cols = line.split("\t")
        try:
            kind, pid = cols[0], int(cols[1])
            if kind == "proc":
                parents[pid] = int(cols[2])
            elif kind == "exec":
                result, path, argv = int(cols[2]), _field(cols[3]), _field(cols[4]) if len(cols) > 4 else ""
                words = argv.split("\x1f") if argv else []
                if result == 0:
                    old = current.get(pid)
                    if old is not None:
                        close(old)
                    if len(trace.runs) < MAX_RUNS:
                        run = TracedRun(pid=pid, parent=parents.get(pid, 0), exe=_clean(path), argv=words)
                        current[pid] = run
                        trace.runs.append(run)
                    else:
                        trace.truncated = True
                        current.pop(pid, None)
                _event(trace, PathEvent(op="exec", path=_clean(path), result=result, pid=pid))
            elif kind in ("out", "err"):
                run = run_for(pid)
                (out if kind == "out" else err).setdefault(id(run), bytearray()).extend(bytes.fromhex(cols[2]))
            elif kind == "exit":
                run = run_for(pid)
                run.exit = int(cols[2])
                close(run)
            elif kind == "open":
                ev = PathEvent(
                    op="open", path=_clean(_field(cols[4])), result=int(cols[2]), flags=int(cols[3]), pid=pid
                )
                _event(trace, ev)
            elif kind in ("stat", "unlink", "mkdir"):
                _event(trace, PathEvent(op=kind, path=_clean(_field(cols[3])), result=int(cols[2]), pid=pid))
            elif kind == "rename":
                ev = PathEvent(
                    op="rename", path=_clean(_field(cols[3])), to=_clean(_field(cols[4])), result=int(cols[2]), pid=pid
                )
                _event(trace, ev)
        except (IndexError, ValueError):
            continue
    for run in list(current.values()):
        close(run)
    return trace


def _event(trace: VerifierTrace, event: PathEvent) -> None:
    if event.path.startswith(_SKIP) or not event.path.startswith("/"):
        return
    if len(trace.events) >= MAX_EVENTS:
        trace.truncated = True
        return
    trace.events.append(event)
