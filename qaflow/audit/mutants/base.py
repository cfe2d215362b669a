"""Mutants: adversarial wrong solutions derived from the oracle's effect (probe 6, weak verifiers).

A mutant is the oracle's end state with something wrong in it: every output emptied, one output
emptied, one line changed, a JSON value changed, a change left out, an output cut to half, its
lines shuffled. Its `writes` (path -> bytes, None = delete) are applied on top of the untouched
environment by `MutantAgent`; full reward for a mutant means the verifier does not check what the
mutant broke.

Targets are the oracle's created/modified regular files whose content was captured, except
scratch (/tmp, caches, __pycache__, .git, installed packages): breaking those is no wrong answer;
and only deliverables (`deliverables`: what the verifier reads, as far as the observation can tell,
never a file in a hidden folder it did not take). A target's copies are broken together with it.
Those files, symlinks and deletions are reproduced as the oracle left them; files too large to
capture are left out of every mutant (which can only make mutants fail, never pass wrongly).
Code files (by extension or shebang) get only empty, truncate and subset mutants: a changed
comment or shuffled lines in code say nothing about the verifier.
"""

from __future__ import annotations

import codecs
import json
import posixpath
import random
import re
import shlex
from collections.abc import Callable, Iterator
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from qaflow.audit.mutants.edge_values import is_mapping
from qaflow.audit.mutants.stated import asks_for_order, tolerated_share
from qaflow.audit.observation import Observation
from qaflow.models.probe_key import ProbeKey
from qaflow.sandbox.base import ExecResult, Sandbox
from qaflow.task import Task
from qaflow.text import utf8_text
from qaflow.trial.effects import ChangeKind, Effect, FileChange

DEFAULT_MODE = 0o644
"""The mode `Sandbox.put` gives a file written from bytes."""
SCRATCH_PREFIXES = ("/tmp/", "/var/tmp/", "/run/", "/var/cache/", "/var/log/", "/var/lib/apt/", "/var/lib/dpkg/")
SCRATCH_PARTS = frozenset(
    {"__pycache__", ".cache", ".git", ".npm", "node_modules", "site-packages", "dist-packages", ".pytest_cache"}
    | {".mypy_cache", ".ruff_cache", ".ipynb_checkpoints"}
)
SCRATCH_NAMES = frozenset({".bash_history", ".python_history", ".wget-hsts", ".lesshst", ".viminfo", ".sqlite_history"})
_CODE = (
    "py pyx sh bash zsh js mjs cjs ts tsx jsx c h cc cpp cxx hpp go rs java kt scala rb pl pm php lua r jl swift cs"
    " fs hs ml ex exs erl clj sql awk sed mk cmake asm s"
)
CODE_SUFFIXES = frozenset("." + suffix for suffix in _CODE.split())
CODE_NAMES = frozenset({"Makefile", "makefile", "GNUmakefile", "Dockerfile", "CMakeLists.txt", "Rakefile"})
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_WORD = re.compile(r"[A-Za-z]{2,}")


class MutantKind(StrEnum):
    EMPTY_ALL = "empty-all"
    EMPTY = "empty"
    CORRUPT_LINE = "corrupt-line"
    JSON_VALUE = "json-value"
    SUBSET = "subset"
    TRUNCATE = "truncate"
    SHUFFLE = "shuffle"
    CODE = "code"
    """One change to Python code the oracle wrote (`qaflow.audit.mutants.code`)."""
    OVERFIT = "overfit"
    """A Python file of the work answering only the instruction's examples (`qaflow.audit.mutants.overfit`)."""
    OUTPUT = "output"
    """A program of the work printing a wrong answer built from its recorded output (`qaflow.audit.mutants.output`)."""
    EDGE = "edge"
    """Every answer made a value a careless comparison accepts (`qaflow.audit.mutants.edge`)."""


class Mutant(BaseModel):
    """One wrong solution: `writes` (None = delete), file modes and symlinks, applied on the untouched environment."""

    model_config = ConfigDict(ser_json_bytes="base64", val_json_bytes="base64")

    name: str = Field(description="Stable name: `empty-all`, `empty:app/out.txt`, `subset:without:app/old.txt`, ...")
    kind: MutantKind
    description: str
    targets: list[str] = Field(default_factory=list, description="The container paths this mutant breaks")
    writes: dict[str, bytes | None] = Field(default_factory=dict)
    modes: dict[str, int] = Field(default_factory=dict, description="Mode per written path (0o644 when absent)")
    links: dict[str, str] = Field(default_factory=dict, description="Symlinks to create: path -> target")


def is_scratch(path: str) -> bool:
    """Whether a path is scratch or a cache (never a target, never left out)."""
    parts = path.split("/")
    return (
        path.startswith(SCRATCH_PREFIXES)
        or any(p in SCRATCH_PARTS or p.endswith(".dist-info") for p in parts[:-1])
        or parts[-1] in SCRATCH_NAMES
        or parts[-1].endswith((".pyc", ".pyo"))
    )


def is_code(change: FileChange) -> bool:
    name = change.path.rsplit("/", 1)[-1]
    suffix = "." + name.rsplit(".", 1)[-1].lower() if "." in name else ""
    return suffix in CODE_SUFFIXES or name in CODE_NAMES or (change.content or b"").startswith(b"#!")


def mentioned(path: str, focus: str) -> bool:
    """Whether `focus` (the instruction and the test files) names `path`, or its file name (3+ characters)."""
    name = path.rsplit("/", 1)[-1]
    return bool(focus) and (path in focus or (len(name) >= 3 and name in focus))


def in_dot_folder(path: str) -> bool:
    """Whether a folder on the way to `path` is hidden (`/app/.oracle/payload/x`): a tool's or a solution's
    own scratch, which globs and listings skip."""
    return any(part.startswith(".") for part in path.split("/")[1:-1])


def deliverables(observation: Observation | None, focus: str) -> Callable[[str], bool]:
    """Which of the oracle's changes are its deliverables, the files a wrong solution would get wrong:
    one the instruction or tests name, or the verifier took (or a folder above it, through no hidden
    folder); when the observation cannot see every read (no observation, or a program whose reads are
    invisible ran), any file outside a hidden folder. A file the verifier never reads is never a target. In
    a hidden folder only the whole path counts as named: a file name alone there is the solution's scratch
    copy of what the instruction named (`answer.txt` unpacked into `/app/.oracle/`), not an answer. Nor is a file
    the traced verifier removed or wrote afresh before reading it (it runs the work to make it again): what it
    checks is made at verify time, whatever the agent left there. Where a program the observers cannot see into
    ran (`python3 -I`) but the verifier's whole run was traced, a file it never read, ran, looked at or listed the
    folder of is no target."""
    trace = observation.trace if observation is not None and observation.observed else None
    regenerated = trace.regenerated() if trace is not None else set()
    listed = set(trace.listed()) if trace is not None else set()
    taken = trace.taken() if trace is not None and not trace.truncated else None

    def deliverable(path: str) -> bool:
        if path in regenerated:
            return False
        if path in focus or (mentioned(path, focus) and not in_dot_folder(path)):
            return True
        if observation is not None and observation.observed and observation.get(path) is not None:
            return observation.touched(path)
        if in_dot_folder(path):
            return False
        if observation is None:
            return True
        if not observation.reads_all_seen():
            if taken is None:
                return True
            return path in taken or posixpath.dirname(path) in listed or observation.touched(path)
        return observation.touched(path)

    return deliverable


MIN_TWIN_BYTES = 16
"""Files this long or longer with the same content are copies of one another (shorter ones match by chance)."""


def oracle_state(effect: Effect) -> tuple[dict[str, bytes | None], dict[str, int], dict[str, str]]:
    """The oracle's end state as writes (None = delete), file modes and symlinks (what `MutantAgent` applies)."""
    base: dict[str, bytes | None] = {}
    modes: dict[str, int] = {}
    links: dict[str, str] = {}
    for c in effect.changes:
        if c.kind is ChangeKind.DELETED:
            base[c.path] = None
        elif c.file_type == "symlink" and c.link_target:
            links[c.path] = c.link_target
        elif c.file_type == "file" and c.content is not None:
            base[c.path] = c.content
            modes[c.path] = c.mode if c.mode is not None else DEFAULT_MODE
    return base, modes, links


def make_mutants(
    effect: Effect,
    *,
    limit: int = 12,
    seed: int = 0,
    focus: str = "",
    deliverable: Callable[[str], bool] | None = None,
    instruction: str | None = None,
) -> list[Mutant]:
    """Up to `limit` distinct mutants of the oracle's `effect`, most informative first; deterministic.

    `focus` (e.g. the instruction and test files) puts files it mentions first; `deliverable` says which
    changes may be targets (default: all but scratch). A target's copies (the same content, written by
    the oracle too) are broken with it: which copy the verifier reads cannot be told. Mutants that
    reproduce the oracle's end state exactly, and duplicates, are skipped. With the task's `instruction`, only
    what it calls wrong is a mutant (`qaflow.audit.mutants.stated`): shuffled lines only where it asks for an
    order, one changed record only where it allows no wrong share that large.
    """
    base, modes, links = oracle_state(effect)
    wanted = deliverable or (lambda _path: True)
    targets = [c for c in effect.written if c.path in base and not is_scratch(c.path) and wanted(c.path)]
    targets.sort(key=lambda c: _rank(c, effect.workdir, focus))
    removals = [c for c in effect.deleted if not is_scratch(c.path) and wanted(c.path)]
    copies: dict[bytes, list[str]] = {}
    for path, data in base.items():
        if data is not None and len(data) >= MIN_TWIN_BYTES and not is_scratch(path):
            copies.setdefault(data, []).append(path)
    stated = _Stated(instruction)
    candidates = sorted(_candidates(targets, removals, seed, stated), key=lambda item: item[0])
    out: list[Mutant] = []
    seen: set[tuple[tuple[str, bytes | None], ...]] = {tuple(sorted(base.items()))}
    for _, kind, broken, changed in candidates:
        if len(out) >= limit:
            break
        if kind is not MutantKind.EMPTY_ALL:
            data = base.get(broken[0])
            twins = [p for p in copies.get(data, []) if p != broken[0]] if data is not None else []
            changed = changed | {p: changed[broken[0]] for p in twins}
            broken = [broken[0], *sorted(twins)]
        writes = {p: v for p, v in base.items() if p not in changed or changed[p] is not ...}
        writes.update({p: v for p, v in changed.items() if v is not ...})
        key = tuple(sorted(writes.items()))
        if key in seen:
            continue
        seen.add(key)
        out.append(_mutant(kind, broken, writes, modes, links))
    return out


_Changed = dict[str, Any]
"""path -> new bytes, or `...` to leave the oracle's change to that path out."""
_Priority = tuple[int, int, int]


class _Stated:
    """What the instruction lets a mutant change without being wrong (everything is wrong without one)."""

    def __init__(self, instruction: str | None):
        self.ordered = instruction is None or asks_for_order(instruction)
        self.tolerance = tolerated_share(instruction) if instruction is not None else 0.0

    def one_wrong_is_wrong(self, records: int) -> bool:
        return records <= 0 or 1 / records > self.tolerance + 1e-9


def _candidates(
    targets: list[FileChange], removals: list[FileChange], seed: int, stated: _Stated
) -> Iterator[tuple[_Priority, MutantKind, list[str], _Changed]]:
    """(priority, kind, broken paths, changes) for every mutant idea; lower priority comes first."""
    if targets:
        yield (0, 0, 0), MutantKind.EMPTY_ALL, [c.path for c in targets], {c.path: b"" for c in targets}
    leave_out = [*targets, *removals] if len(targets) + len(removals) >= 2 else []
    for rank, c in enumerate(targets):
        data = c.content or b""
        text = utf8_text(data)
        data_text = text is not None and not is_code(c)
        rng = random.Random(f"{seed}:{c.path}")
        ideas: list[tuple[int, MutantKind, bytes | None]] = [(1, MutantKind.EMPTY, b"")]
        if data_text and text is not None:
            is_json = c.path.endswith(".json") or text.lstrip()[:1] in ("{", "[")
            json_new = _json_value(text, rng) if is_json else None
            if json_new is not None:
                if stated.one_wrong_is_wrong(_json_leaves(text)):
                    ideas.append((2, MutantKind.JSON_VALUE, json_new.encode()))
            else:
                if stated.one_wrong_is_wrong(sum(1 for ln in text.splitlines() if ln.strip())):
                    ideas.append((2, MutantKind.CORRUPT_LINE, _encode(_corrupt_line(text, rng))))
                if stated.ordered:
                    ideas.append((4, MutantKind.SHUFFLE, _encode(_shuffle(text, rng))))
        ideas.append((3, MutantKind.TRUNCATE, _truncate(data, text)))
        for tier, kind, new in ideas:
            if new is not None:
                yield (tier, rank, list(MutantKind).index(kind)), kind, [c.path], {c.path: new}
    for rank, c in enumerate(leave_out):
        tier = 3 if c.kind is ChangeKind.CREATED else 1  # absent is rarely more telling than empty
        yield (tier, rank, list(MutantKind).index(MutantKind.SUBSET)), MutantKind.SUBSET, [c.path], {c.path: ...}


def _mutant(
    kind: MutantKind, broken: list[str], writes: dict[str, bytes | None], modes: dict[str, int], links: dict[str, str]
) -> Mutant:
    kept_modes = {p: m for p, m in modes.items() if writes.get(p) is not None}
    if kind is MutantKind.EMPTY_ALL:
        what, broken = f"every file the oracle wrote made empty ({len(broken)} files)", sorted(broken)
        return Mutant(
            name=kind.value, kind=kind, description=what, targets=broken, writes=writes, modes=kept_modes, links=links
        )
    target = broken[0]
    also = f" (and its copies {', '.join(broken[1:])})" if broken[1:] else ""
    rel = target.lstrip("/")
    name = f"subset:without:{rel}" if kind is MutantKind.SUBSET else f"{kind.value}:{rel}"
    what = {
        MutantKind.EMPTY: f"{target} made empty",
        MutantKind.CORRUPT_LINE: f"one line of {target} changed (a number perturbed, else letters altered)",
        MutantKind.JSON_VALUE: f"one value in the JSON of {target} changed",
        MutantKind.SUBSET: f"the oracle's change to {target} left out",
        MutantKind.TRUNCATE: f"{target} cut to its first half",
        MutantKind.SHUFFLE: f"the lines of {target} shuffled",
    }[kind]
    return Mutant(
        name=name,
        kind=kind,
        description=f"the oracle's result with {what}{also}",
        targets=broken,
        writes=writes,
        modes=kept_modes,
        links=links,
    )


def _rank(c: FileChange, workdir: str | None, focus: str) -> tuple[int, int, int, str]:
    in_workdir = bool(workdir and c.path.startswith(workdir.rstrip("/") + "/"))
    return (not mentioned(c.path, focus), not in_workdir, c.kind is not ChangeKind.CREATED, c.path)


def _encode(text: str | None) -> bytes | None:
    return None if text is None else text.encode()


def _lines(text: str) -> tuple[list[str], bool]:
    lines = text.split("\n")
    ends = lines[-1] == ""
    return (lines[:-1] if ends else lines), ends


def _join(lines: list[str], ends: bool) -> str:
    return "\n".join(lines) + ("\n" if ends else "")


def _bump(number: str) -> str:
    whole, dot, frac = number.partition(".")
    return str(int(whole) + 1).zfill(len(whole)) + dot + frac


def _alter(line: str, rng: random.Random) -> str:
    words = list(_WORD.finditer(line))
    if words:
        m = words[rng.randrange(len(words))]
        return line[: m.start()] + codecs.encode(m.group(), "rot13") + line[m.end() :]
    return line + "x"


def _sort_order(lines: list[str]) -> int:
    """1 where `lines` (two or more, not all equal) are in ascending order, -1 descending, else 0."""
    if len(set(lines)) < 2:
        return 0
    return 1 if lines == sorted(lines) else -1 if lines == sorted(lines, reverse=True) else 0


def _corrupt_line(text: str, rng: random.Random) -> str | None:
    """One line changed: a number in it perturbed (+1), else one word's letters altered (rot13); lines that were in
    sorted order are sorted again (only the one value is wrong, not the order as well)."""
    lines, ends = _lines(text)
    order = _sort_order(lines)
    filled = [i for i, line in enumerate(lines) if line.strip()]
    numeric = [i for i in filled if _NUMBER.search(lines[i])]
    pool = numeric or [i for i in filled if _WORD.search(lines[i])] or filled
    if not pool:
        return None
    i = pool[rng.randrange(len(pool))]
    if numeric:
        found = list(_NUMBER.finditer(lines[i]))
        m = found[rng.randrange(len(found))]
        lines[i] = lines[i][: m.start()] + _bump(m.group()) + lines[i][m.end() :]
    else:
        lines[i] = _alter(lines[i], rng)
    if order:
        lines = sorted(lines, reverse=order < 0)
    return _join(lines, ends)


def _shuffle(text: str, rng: random.Random) -> str | None:
    lines, ends = _lines(text)
    if len(set(lines)) < 2 or is_mapping(text):
        return None
    shuffled = lines[:]
    rng.shuffle(shuffled)
    if shuffled == lines:
        shuffled = lines[1:] + lines[:1]
    return _join(shuffled, ends)


def _truncate(data: bytes, text: str | None) -> bytes | None:
    if text is None:  # half of what precedes the trailing padding (an archive's zero blocks are no content)
        content = data.rstrip(b"\0")
        return content[: len(content) // 2] if content else None
    lines, ends = _lines(text)
    if len(lines) >= 2:
        return _join(lines[: len(lines) // 2], ends).encode()
    return text[: len(text.rstrip("\n")) // 2].encode() if text else None


def _leaves(doc: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    if isinstance(doc, dict):
        for key, value in doc.items():
            yield from _leaves(value, (*path, key))
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            yield from _leaves(value, (*path, i))
    else:
        yield path, doc


def _json_leaves(text: str) -> int:
    try:
        return sum(1 for _ in _leaves(json.loads(text)))
    except ValueError:
        return 0


def _json_value(text: str, rng: random.Random) -> str | None:
    """The JSON `text` with one leaf changed (numbers first), dumped in the same style; None if not JSON."""
    try:
        doc = json.loads(text)
    except ValueError:
        return None
    leaves = list(_leaves(doc))
    numbers = [leaf for leaf in leaves if isinstance(leaf[1], int | float) and not isinstance(leaf[1], bool)]
    strings = [leaf for leaf in leaves if isinstance(leaf[1], str)]
    pool = numbers or strings or leaves
    if not pool or not pool[0][0]:
        return None  # a bare scalar document: corrupt-line covers it
    path, value = pool[rng.randrange(len(pool))]
    if isinstance(value, bool) or value is None:
        new: Any = not value if isinstance(value, bool) else 0
    elif isinstance(value, int | float):
        new = value + 1
    else:
        new = _alter(value, rng) if value else "x"
    holder = doc
    for key in path[:-1]:
        holder = holder[key]
    holder[path[-1]] = new
    indent_m = re.search(r"\n([ \t]+)\S", text)
    multiline = "\n" in text.strip()
    indent = (indent_m.group(1) if indent_m else 0) if multiline else None
    item_sep = "," if multiline or not re.search(r",\s", text) else ", "
    key_sep = ": " if re.search(r'"\s*:\s', text) else ":"
    dumped = json.dumps(doc, indent=indent, separators=(item_sep, key_sep), ensure_ascii=text.isascii())
    return dumped + text[len(text.rstrip()) :]


class MutantAgent:
    """Applies a mutant's writes (puts, then one exec for modes, deletions and symlinks)."""

    def __init__(self, mutant: Mutant):
        self.mutant = mutant
        self.name = str(ProbeKey.mutant(mutant.name))

    def run(self, task: Task, sandbox: Sandbox) -> ExecResult | None:
        commands: list[str] = []
        removed = [p for p, data in self.mutant.writes.items() if data is None]
        if removed:
            commands.append("rm -f -- " + " ".join(shlex.quote(p) for p in sorted(removed)))
        for path, data in sorted(self.mutant.writes.items()):
            if data is None:
                continue
            sandbox.put(path, data)
            mode = self.mutant.modes.get(path, DEFAULT_MODE)
            if mode != DEFAULT_MODE:
                commands.append(f"chmod {mode:o} {shlex.quote(path)}")
        for path, target in sorted(self.mutant.links.items()):
            quoted = shlex.quote(path)
            commands.append(f'mkdir -p -- "$(dirname {quoted})" && ln -sfn -- {shlex.quote(target)} {quoted}')
        if not commands:
            return None
        script = "rc=0\n" + "".join(f"{{ {cmd}; }} || rc=1\n" for cmd in commands) + "exit $rc\n"
        return sandbox.exec(script, timeout=task.agent_timeout_sec, user="0")
