"""Fuzzing task loading (issue 11): `Task.load` on generated task folders (task.toml texts, instruction
bytes, file trees with odd names, symlinks inside/outside/dangling/looping, oversized, binary and special
files, Dockerfile COPY lines) gives either a sane `Task` or a `TaskError` whose path lies in the task
folder and whose reason is a non-empty string. Never another exception, never a hang (an alarm fails a
load that blocks, e.g. on a fifo), never a silent wrong value (what task.toml says is what loads, and a
folder that must be refused is refused).
"""

from __future__ import annotations

import math
import os
import re
import signal
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomli_w
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from qaflow.errors import TaskError
from qaflow.task import DEFAULT_MAX_FILE_BYTES, IGNORED_NAMES, Task, tree_hash

FUZZ = settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)
HEX64 = re.compile(r"[0-9a-f]{64}")
LOAD_SECONDS = 20
GOOD_TOML = 'schema_version = "1.4"\n[task]\nname = "fuzz/task"\n[agent]\ntimeout_sec = 30.0\n'


# --- the property ----------------------------------------------------------------------------------------


@contextmanager
def alarm(seconds: int) -> Iterator[None]:
    """Fail (instead of hanging forever) when the block runs longer than `seconds`."""

    def expire(signum: int, frame: Any) -> None:
        raise TimeoutError(f"Task.load still running after {seconds} s: a hang")

    previous = signal.signal(signal.SIGALRM, expire)
    started = time.monotonic()
    outer_delay, outer_interval = signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer_delay:  # give back an enclosing timer (pytest-timeout's, say), less the time spent here
            left = outer_delay - (time.monotonic() - started)
            signal.setitimer(signal.ITIMER_REAL, max(left, 0.001), outer_interval)


def _inside(path: Path, root: Path) -> bool:
    p, r = os.path.normpath(os.path.abspath(path)), os.path.normpath(os.path.abspath(root))
    return os.path.commonpath([p, r]) == r


def load(root: Path, **kwargs: Any) -> Task | TaskError:
    """Task.load under the property: a sane Task or a well-formed TaskError, nothing else."""
    try:
        with alarm(LOAD_SECONDS):
            task = Task.load(root, **kwargs)
    except TaskError as e:
        assert isinstance(e.reason, str) and e.reason.strip(), f"TaskError without a reason: {e!r}"
        assert _inside(e.path, root), f"TaskError path {e.path} is outside the task folder {root}"
        return e
    assert isinstance(task.name, str) and task.name.strip(), f"empty task name {task.name!r}"
    assert HEX64.fullmatch(task.version) and HEX64.fullmatch(task.env_hash)
    assert isinstance(task.instruction, str)
    task.instruction.encode("utf-8")  # real text, no lone surrogates
    config = task.config
    phases = [config.agent, config.verifier] + [p for s in config.steps or [] for p in (s.agent, s.verifier)]
    timeouts = [task.agent_timeout_sec, task.verifier_timeout_sec, config.environment.build_timeout_sec]
    timeouts += [p.timeout_sec for p in phases if p.timeout_sec is not None]
    for seconds in timeouts:
        assert isinstance(seconds, float) and math.isfinite(seconds) and seconds > 0, f"timeout {seconds!r}"
    for step in config.steps or []:
        assert step.name not in ("", ".", "..") and "/" not in step.name and "\0" not in step.name
        assert _inside(root / "steps" / step.name, root / "steps")
    assert task.version == tree_hash(root), "the version is not the hash of the folder"
    return task


def weighted(*options: tuple[int, st.SearchStrategy[Any]]) -> st.SearchStrategy[Any]:
    """One of the strategies, picked with the given weights (`st.one_of` weighs its flattened branches alike)."""
    total = sum(weight for weight, _ in options)

    def pick(i: int) -> st.SearchStrategy[Any]:
        for weight, strategy in options:
            if i < weight:
                return strategy
            i -= weight
        raise AssertionError(i)  # pragma: no cover

    return st.integers(min_value=0, max_value=total - 1).flatmap(pick)


# --- file trees ------------------------------------------------------------------------------------------

DIRS = ["", "environment", "tests", "solution", "sub", "environment/deep/er", "sub/..dots"]
_name_chars = st.characters(codec="utf-8", exclude_characters="/\0")
odd_names = st.one_of(
    st.text(_name_chars, min_size=1, max_size=20),
    st.sampled_from(
        [
            "..foo",
            "-rf",
            "--help",
            " space ",
            "a b",
            ".hidden",
            "...",
            "~",
            "$HOME",
            "*",
            "?",
            "\\",
            "\n",
            "x\ty",
            "é",
            "日本語",
            "🙂",
            "Dockerfile",
            "test.sh",
            "solve.sh",
            "CON",
            "a:b",
            "\u202e",
            "\ufeff",
            "\x7f",
        ]
    ),
    st.integers(min_value=200, max_value=255).map(lambda n: "l" * n),
    st.text(st.sampled_from("日é🙂"), min_size=50, max_size=85),
    st.binary(min_size=1, max_size=12).filter(lambda b: b"/" not in b and b"\0" not in b).map(os.fsdecode),
).filter(lambda n: n not in (".", "..") and n not in IGNORED_NAMES and 0 < len(os.fsencode(n)) <= 255)

BAD_KINDS = {"big", "fifo", "link_outside_abs", "link_outside_rel", "link_self", "link_loop", "link_dangling_abs"}
HARMLESS_KINDS = ["file", "exact", "dir", "link_inside_file", "link_inside_dir", "link_dangling", "link_dot"]


@dataclass
class Entry:
    folder: str
    name: str
    kind: str
    data: bytes


entries = st.builds(
    Entry,
    folder=st.sampled_from(DIRS),
    name=odd_names,
    kind=weighted((3, st.sampled_from(HARMLESS_KINDS)), (1, st.sampled_from(sorted(BAD_KINDS)))),
    data=st.one_of(st.binary(max_size=64), st.sampled_from([b"", b"\0" * 10, b"\xff\xfe\x00", "é".encode()])),
)
harmless_entries = st.builds(
    Entry,
    folder=st.sampled_from(DIRS),
    name=odd_names,
    kind=st.sampled_from(HARMLESS_KINDS),
    data=st.binary(max_size=64),
).filter(lambda e: (e.folder, e.name) != ("tests", "Dockerfile"))  # a separate verifier's Dockerfile is parsed


def _place(root: Path, entry: Entry, index: int, max_file_bytes: int) -> bool:
    """Create one entry; False when its path is taken (by a required file, a folder or an earlier entry)."""
    folder = root / entry.folder
    path = folder / entry.name
    if os.path.lexists(path):
        return False
    depth = len(Path(entry.folder).parts)
    kind = entry.kind
    if kind == "file":
        path.write_bytes(entry.data)
    elif kind == "exact":  # exactly at the limit (a sparse tail; just the data when the limit is the default)
        path.write_bytes(entry.data)
        if max_file_bytes < 2**20:
            os.truncate(path, max_file_bytes)
    elif kind == "big":
        with path.open("wb") as fh:
            fh.truncate(max_file_bytes + 1 + len(entry.data))
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "dir":
        path.mkdir()
        (path / "inner.bin").write_bytes(entry.data)
    elif kind == "link_inside_file":
        os.symlink(os.path.relpath(root / "instruction.md", folder), path)
    elif kind == "link_inside_dir":
        os.symlink(os.path.relpath(root / "tests", folder), path)
    elif kind == "link_dot":
        os.symlink(".", path)
    elif kind == "link_dangling":
        os.symlink(f"no-such-{index}", path)
    elif kind == "link_dangling_abs":
        os.symlink(f"/no/such/path-{index}", path)
    elif kind == "link_outside_abs":
        os.symlink("/etc/passwd" if index % 2 else "/", path)
    elif kind == "link_outside_rel":
        os.symlink("../" * (depth + 1) + "outside.txt", path)
    elif kind == "link_self":
        os.symlink(entry.name, path)
    elif kind == "link_loop":
        other = folder / f"loop-{index}"
        if os.path.lexists(other):
            return False
        os.symlink(other.name, path)
        os.symlink(entry.name, other)
    else:  # pragma: no cover
        raise AssertionError(kind)
    return True


def build(
    base: Path,
    *,
    toml: bytes | None = GOOD_TOML.encode(),
    instruction: bytes | str | None = b"Do the thing.\n",
    dockerfile: bytes | None = None,
    test_sh: bool = True,
    solve_sh: bool = True,
    tree: Sequence[Entry] = (),
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
) -> tuple[Path, set[str]]:
    """A task folder `base/t` (with a file `base/outside.txt` beside it); returns it and the kinds placed."""
    (base / "outside.txt").write_text("outside")
    root = base / "t"
    for d in DIRS:
        (root / d).mkdir(parents=True, exist_ok=True)
    if toml is not None:
        (root / "task.toml").write_bytes(toml)
    if isinstance(instruction, bytes):
        (root / "instruction.md").write_bytes(instruction)
    elif instruction == "DIR":
        (root / "instruction.md").mkdir()
    elif instruction == "FIFO":
        os.mkfifo(root / "instruction.md")
    elif instruction == "OUTSIDE":
        os.symlink("../outside.txt", root / "instruction.md")
    elif instruction == "LINK":
        (root / "sub" / "real.md").write_text("linked instruction")
        os.symlink("sub/real.md", root / "instruction.md")
    if dockerfile is not None:
        (root / "environment" / "Dockerfile").write_bytes(dockerfile)
    if test_sh:
        (root / "tests" / "test.sh").write_text("#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n")
    if solve_sh:
        (root / "solution" / "solve.sh").write_text("#!/bin/bash\ntrue\n")
    placed = set()
    for index, entry in enumerate(tree):
        if _place(root, entry, index, max_file_bytes):
            placed.add(entry.kind)
    return root, placed


# --- task.toml -------------------------------------------------------------------------------------------

toml_scalar = st.one_of(
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.integers(min_value=-(10**40), max_value=10**40),
    st.floats(),
    st.text(max_size=20),
    st.datetimes(),
    st.dates(),
)
toml_value = st.recursive(
    toml_scalar,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
timeouts = st.one_of(
    st.floats(),
    st.floats(min_value=0.001, max_value=1e6),
    st.integers(min_value=-10, max_value=10**20),
    st.sampled_from([0, 0.0, -0.0, 1e-320, 1e308, "30", "inf", "nan", "", True, False]),
    toml_value,
)
sizes = st.one_of(
    st.sampled_from(["2G", "512M", "1.5G", "64K", "-1G", "infG", "nanM", "1e400M", "G", "", "0", "2", "2GB", "2g"]),
    st.floats(),
    st.integers(min_value=-(10**30), max_value=10**30),
    toml_value,
)
step_names = st.one_of(
    st.text(_name_chars, min_size=1, max_size=10),
    st.sampled_from(["one", "../../escape", "/etc", ".", "..", "", "a/b", "a\\b", "a\0b", " ", "..x", "-x"]),
)


def _phase(with_env: bool = False) -> st.SearchStrategy[dict[str, Any]]:
    optional: dict[str, st.SearchStrategy[Any]] = {
        "timeout_sec": timeouts,
        "user": toml_value,
        "network_mode": st.one_of(st.sampled_from(["no-network", "public", "allowlist", "bogus"]), toml_value),
        "extra_field": toml_value,
    }
    if with_env:
        optional["env"] = st.one_of(st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=3), toml_value)
    return st.fixed_dictionaries({}, optional=optional)


toml_docs = st.fixed_dictionaries(
    {},
    optional={
        "schema_version": weighted((4, st.sampled_from(["1.0", "1.4", "9.9"])), (1, toml_value)),
        "version": toml_value,
        "task": weighted(
            (
                4,
                st.fixed_dictionaries(
                    {"name": weighted((4, st.text(max_size=20)), (1, st.sampled_from(["", " ", "\t", "ok/name"])))},
                    optional={"description": toml_value, "keywords": toml_value, "authors": toml_value},
                ),
            ),
            (1, toml_value),
        ),
        "agent": _phase(),
        "verifier": _phase(with_env=True),
        "environment": st.fixed_dictionaries(
            {},
            optional={
                "memory": sizes,
                "storage": sizes,
                "memory_mb": st.one_of(st.integers(min_value=0, max_value=10**6), toml_value),
                "build_timeout_sec": timeouts,
                "allow_internet": toml_value,
                "cpus": toml_value,
            },
        ),
        "metadata": weighted((4, st.dictionaries(st.text(max_size=8), toml_value, max_size=3)), (1, toml_value)),
        "steps": st.lists(
            st.fixed_dictionaries({"name": step_names}, optional={"agent": _phase(), "min_reward": toml_value}),
            max_size=3,
        ),
        "random_key": toml_value,
    },
)


def _toml_bytes(doc: dict[str, Any]) -> bytes:
    return tomli_w.dumps(doc).encode("utf-8", "surrogatepass")


def _toml_or_comment(doc: dict[str, Any]) -> bytes:
    try:
        return _toml_bytes(doc)
    except (TypeError, ValueError):  # a value tomli_w cannot write
        return b"# unwritable document\n"


raw_toml = st.one_of(
    st.text(max_size=200).map(lambda t: t.encode("utf-8", "surrogatepass")),
    st.binary(max_size=200),
    st.tuples(toml_docs.map(_toml_or_comment), st.integers(min_value=0, max_value=400)).map(lambda t: t[0][: t[1]]),
    st.integers(min_value=1, max_value=50_000).map(lambda n: b"a = " + b"[" * n + b"]" * n),
    st.integers(min_value=1, max_value=50_000).map(lambda n: b"a = " + b"{b = " * n + b"1" + b"}" * n),
    st.sampled_from(
        [
            b"",
            b"[task]\nname = 1\n",
            b"[task]\n[task]\n",
            b"a = 1\na = 2\n",
            b"\xef\xbb\xbf[task]\nname='x'\n",
            b"[agent]\ntimeout_sec = 1e999\n",
            b'[environment]\nmemory = "' + b"9" * 400 + b'G"\n',
        ]
    ),
)


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _check_toml_values(doc: dict[str, Any], result: Task | TaskError) -> None:
    """What task.toml says is what loads: a valid value is kept as written, an invalid one refused."""
    for section in ("agent", "verifier"):
        phase = doc.get(section)
        if isinstance(phase, dict) and _number(phase.get("timeout_sec")):
            value = phase["timeout_sec"]
            if not (math.isfinite(value) and value > 0):
                assert isinstance(result, TaskError), f"{section}.timeout_sec = {value!r} was accepted"
            elif isinstance(result, Task):
                assert getattr(result.config, section).timeout_sec == float(value)
    task_table = doc.get("task")
    if isinstance(task_table, dict) and isinstance(task_table.get("name"), str):
        if not task_table["name"].strip():
            assert isinstance(result, TaskError), "an empty task name was accepted"
        elif isinstance(result, Task):
            assert result.name == task_table["name"]
    env = doc.get("environment") or {}
    if isinstance(result, Task) and isinstance(env, dict) and "memory" in env and "memory_mb" not in env:
        assert result.config.environment.memory_mb is not None and result.config.environment.memory_mb >= 0
    for step in doc.get("steps") or []:
        name = step.get("name") if isinstance(step, dict) else None
        if name in ("", ".", "..") or (isinstance(name, str) and ("/" in name or "\0" in name)):
            assert isinstance(result, TaskError), f"step name {name!r} was accepted"


@FUZZ
@given(doc=toml_docs, require_solution=st.booleans())
@example(doc={"agent": {"timeout_sec": -5}}, require_solution=True)
@example(doc={"agent": {"timeout_sec": float("inf")}}, require_solution=True)
@example(doc={"verifier": {"timeout_sec": float("nan")}}, require_solution=True)
@example(doc={"verifier": {"timeout_sec": 0}}, require_solution=True)
@example(doc={"environment": {"build_timeout_sec": -1.0}}, require_solution=True)
@example(doc={"environment": {"memory": "infG"}}, require_solution=True)
@example(doc={"environment": {"memory": float("inf")}}, require_solution=True)
@example(doc={"environment": {"storage": "-5G"}}, require_solution=True)
@example(doc={"task": {"name": ""}}, require_solution=True)
@example(doc={"steps": [{"name": "../../escape"}]}, require_solution=True)
@example(doc={"steps": [{"name": "/etc"}]}, require_solution=True)
@example(doc={"steps": [{"name": "a\0b"}]}, require_solution=True)
def test_task_toml_documents(doc: dict[str, Any], require_solution: bool) -> None:
    """Valid TOML with random, odd and wrongly typed fields."""
    try:
        text = _toml_bytes(doc)
    except (TypeError, ValueError):  # something tomli_w cannot write (e.g. a NaN inside an array of tables)
        assume(False)
    with tempfile.TemporaryDirectory() as d:
        root, _ = build(Path(d), toml=text)
        for step in doc.get("steps") or []:
            name = step.get("name")
            if isinstance(name, str) and name and "\0" not in name and "/" not in name and name not in (".", ".."):
                step_dir = root / "steps" / name
                step_dir.mkdir(parents=True, exist_ok=True)
                (step_dir / "instruction.md").write_text("step")
                (step_dir / "solution").mkdir(exist_ok=True)
                (step_dir / "solution" / "solve.sh").write_text("true")
        result = load(root, require_solution=require_solution)
        _check_toml_values(doc, result)


@FUZZ
@given(toml=raw_toml)
@example(toml=b"a = " + b"[" * 5000 + b"]" * 5000)
@example(toml=b"\xff\xfe")
def test_task_toml_raw(toml: bytes) -> None:
    """Any bytes as task.toml: invalid TOML, invalid UTF-8, truncated documents, deep nesting, huge numbers."""
    with tempfile.TemporaryDirectory() as d:
        root, _ = build(Path(d), toml=toml)
        load(root)


# --- the whole folder ------------------------------------------------------------------------------------

instructions = weighted(
    (1, st.none()),
    (2, st.sampled_from(["DIR", "FIFO", "OUTSIDE", "LINK"])),
    (1, st.binary(max_size=100)),
    (5, st.text(max_size=100).map(str.encode)),
    (1, st.sampled_from([b"", b"\xff", b"ok\x00nul", b"\xed\xa0\x80", "é".encode("latin-1")])),
)
copy_args = st.one_of(
    st.sampled_from(
        [
            '["a", 1]',
            "[1, 2]",
            '["../x", "/y"]',
            "../x /y",
            "/abs /y",
            "--chown=1 ../../x /y",
            "a/../../x /y",
            '"unclosed /y',
            "'",
            "[",
            "[[[",
            "\x00 /y",
            "/a\x00b /y",
            "http://x/y /z",
            "--from=b ../x /y",
            "",
            '["a"]x',
            '{"a": 1}',
            "a b c d",
            "$X /y",
            "~ /y",
            "\\",
            "a \\\n  b /y",
        ]
    ),
    st.integers(min_value=1, max_value=20_000).map(lambda n: "[" * n + "]" * n),
    st.text(max_size=30),
)
dockerfiles = weighted(
    (3, st.none()),
    (2, st.lists(copy_args.map(lambda a: f"COPY {a}"), max_size=4).map(lambda ls: "FROM x\n" + "\n".join(ls) + "\n")),
    (1, st.lists(copy_args.map(lambda a: f"ADD {a}"), max_size=2).map(lambda ls: "FROM x\n" + "\n".join(ls))),
    (1, st.text(max_size=100)),
).map(lambda t: None if t is None else t.encode())
dockerfiles = weighted((6, dockerfiles), (1, st.binary(max_size=50)))


@FUZZ
@given(
    toml=weighted(
        (4, st.just(GOOD_TOML.encode())), (2, toml_docs.map(_toml_or_comment)), (1, raw_toml), (1, st.none())
    ),
    instruction=instructions,
    dockerfile=dockerfiles,
    test_sh=weighted((5, st.just(True)), (1, st.just(False))),
    solve_sh=weighted((5, st.just(True)), (1, st.just(False))),
    tree=st.lists(entries, max_size=8),
    max_file_bytes=weighted(
        (1, st.integers(min_value=0, max_value=300)),
        (4, st.integers(min_value=1024, max_value=4096)),
        (1, st.just(DEFAULT_MAX_FILE_BYTES)),
    ),
    require_solution=st.booleans(),
)
@example(
    toml=GOOD_TOML.encode(),
    instruction=b"x",
    dockerfile=b"FROM x\nCOPY [1, 2]\n",
    test_sh=True,
    solve_sh=True,
    tree=[],
    max_file_bytes=100,
    require_solution=True,
)
@example(
    toml=GOOD_TOML.encode(),
    instruction=b"x",
    dockerfile=b"FROM x\nCOPY /a\x00b /y\n",
    test_sh=True,
    solve_sh=True,
    tree=[Entry("", "\udcff", "link_loop", b"")],
    max_file_bytes=100,
    require_solution=True,
)
def test_task_folder(
    toml: bytes | None,
    instruction: bytes | str | None,
    dockerfile: bytes | None,
    test_sh: bool,
    solve_sh: bool,
    tree: list[Entry],
    max_file_bytes: int,
    require_solution: bool,
) -> None:
    """Everything random at once. A folder holding a file over the limit, a fifo, a symlink out of the
    folder or a symlink loop is always refused."""
    with tempfile.TemporaryDirectory() as d:
        root, placed = build(
            Path(d),
            toml=toml,
            instruction=instruction,
            dockerfile=dockerfile,
            test_sh=test_sh,
            solve_sh=solve_sh,
            tree=tree,
            max_file_bytes=max_file_bytes,
        )
        result = load(root, require_solution=require_solution, max_file_bytes=max_file_bytes)
        bad = placed & BAD_KINDS
        if instruction in (None, "DIR", "FIFO", "OUTSIDE"):
            bad.add(f"instruction {instruction}")
        if toml is None:
            bad.add("no task.toml")
        if not test_sh:
            bad.add("no tests/test.sh")
        if require_solution and not solve_sh:
            bad.add("no solution/solve.sh")
        assert not (bad and isinstance(result, Task)), f"accepted a folder with {sorted(bad)}"
        if isinstance(result, Task) and not result.config.steps:
            expected = b"linked instruction" if instruction == "LINK" else instruction
            assert isinstance(expected, bytes)
            assert result.instruction == _text_mode(expected.decode("utf-8")), "the instruction is not the file's"


def _text_mode(text: str) -> str:
    """What reading a file in text mode gives (universal newlines)."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


@FUZZ
@given(
    tree=st.lists(harmless_entries, max_size=10),
    name=st.text(min_size=1, max_size=30).filter(lambda n: n.strip()),
    instruction=st.text(max_size=200),
    agent_timeout=st.floats(min_value=1e-3, max_value=1e9),
    memory=st.sampled_from(["2G", "512M", "1.5G", "64K", 1024, 0]),
    max_file_bytes=st.integers(min_value=1024, max_value=4096),
)
def test_valid_task_with_odd_files_loads(
    tree: list[Entry], name: str, instruction: str, agent_timeout: float, memory: Any, max_file_bytes: int
) -> None:
    """No false refusals: a valid task with odd names, binary files, files at the size limit, symlinks that
    stay inside (dangling ones included) loads, with exactly the values written; the version follows the
    content."""
    doc = {"task": {"name": name}, "agent": {"timeout_sec": agent_timeout}, "environment": {"memory": memory}}
    with tempfile.TemporaryDirectory() as d:
        root, _ = build(
            Path(d),
            toml=_toml_bytes(doc),
            instruction=instruction.encode(),
            dockerfile=b'FROM x\nCOPY . /app\nCOPY ["a b", "/c"]\n',
            tree=tree,
            max_file_bytes=max_file_bytes,
        )
        task = load(root, max_file_bytes=max_file_bytes)
        assert isinstance(task, Task), f"a valid task was refused: {task}"
        assert task.name == name
        assert task.instruction == _text_mode(instruction)
        assert task.agent_timeout_sec == agent_timeout
        assert task.config.environment.memory_mb is not None and task.config.environment.memory_mb >= 0
        again = load(root, max_file_bytes=max_file_bytes)
        assert isinstance(again, Task) and again.version == task.version
        with (root / "instruction.md").open("ab") as fh:
            fh.write(b"!")
        changed = load(root, max_file_bytes=max_file_bytes)
        assert isinstance(changed, Task) and changed.version != task.version
