"""A static reading of a task's tests: which state paths each check opens or compares.

Heuristic, documented in docs/harden.md:
- every `*.py`, `*.sh` and `*.bash` file under tests/ is read; files that name no state path are
  plumbing (a `test.sh` that runs `check.py`), not checks;
- a state path is an absolute path literal under the environment's WORKDIR (default `/app`), or any
  absolute path the instruction names, except under /tests, /logs and /solution;
- Python: string literals are collected with `ast`, including `Path("/app") / "out"`-style joins of
  literals; a file with pytest-style `test_*` functions (top level or in `Test*` classes) gives one
  check per function, with the literals in its body plus those of the module-level names it uses;
  otherwise the whole file is one check;
- shell: path literals in the code (comments dropped); the whole file is one check.
Paths built at run time (`folder / name`, f-strings) are not seen.
"""

from __future__ import annotations

import ast
import posixpath
import re
from dataclasses import dataclass, field

from qaflow.sandbox.dockerfile import DEFAULT_WORKDIR
from qaflow.task import Task, _walk_files
from qaflow.text import dockerfile_logical_lines

PATH_RE = re.compile(r"(?<![\w.~$/-])(/(?:[\w.@+-]+/)*[\w.@+*-]+/?)")
HIDDEN = ("/tests", "/logs", "/solution")
SCRIPT_SUFFIXES = (".py", ".sh", ".bash")


@dataclass
class ReadCheck:
    """One check found in a test file: `key` is `tests/x.py` or `tests/x.py::test_name`."""

    key: str
    file: str
    paths: set[str] = field(default_factory=set)


def workdir_of(task: Task) -> str:
    """The environment's final WORKDIR (relative ones resolved), `/app` when it sets none."""
    workdir = DEFAULT_WORKDIR
    dockerfile = task.dockerfile
    text = dockerfile.read_text(encoding="utf-8", errors="replace") if dockerfile.is_file() else ""
    for line in dockerfile_logical_lines(text):
        words = line.split(None, 1)
        if len(words) == 2 and words[0].upper() == "WORKDIR":
            workdir = posixpath.normpath(posixpath.join(workdir, words[1].strip().strip("\"'")))
    return task.config.environment.workdir or workdir


def normalise(path: str) -> str:
    """A container path without a trailing slash (but `/` stays `/`) and without `.` segments."""
    return posixpath.normpath(path) if path != "/" else path


def state_path(path: str, workdir: str, named: set[str]) -> bool:
    """Whether `path` is part of the task's state: under the workdir, or named by the instruction."""
    p = normalise(path)
    if any(p == h or p.startswith(h + "/") for h in HIDDEN):
        return False
    return p == workdir or p.startswith(workdir.rstrip("/") + "/") or p in named


def paths_in(text: str) -> set[str]:
    """Absolute path literals in `text` (a sentence's final period is not part of a path)."""
    return {normalise(m.group(1).rstrip(".") or "/") for m in PATH_RE.finditer(text)}


def read_tests(task: Task) -> list[ReadCheck]:
    """The checks found in tests/, each with the state paths it names; sorted by key."""
    workdir = normalise(workdir_of(task))
    named = paths_in(task.instruction)
    checks: list[ReadCheck] = []
    for path in _walk_files(task.tests_dir) if task.tests_dir.is_dir() else []:
        if path.suffix not in SCRIPT_SUFFIXES or not path.is_file():
            continue
        rel = path.relative_to(task.path).as_posix()
        text = path.read_text(encoding="utf-8", errors="replace")
        found = _python_checks(rel, text) if path.suffix == ".py" else [ReadCheck(rel, rel, paths_in(_code(text)))]
        for check in found:
            check.paths = {p for p in check.paths if state_path(p, workdir, named)}
            if check.paths:
                checks.append(check)
    return sorted(checks, key=lambda c: c.key)


def _code(shell: str) -> str:
    """Shell text without comment lines and trailing comments (a `#` after whitespace)."""
    return "\n".join(re.split(r"(?:^|\s)#", line, maxsplit=1)[0] for line in shell.splitlines())


def _literal_paths(node: ast.AST) -> set[str]:
    """Path literals under `node`: string constants, and `/` joins of string literals (as one path)."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        joined = _joined(node)
        if joined is not None:
            return paths_in(joined)
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return paths_in(node.value)
    found: set[str] = set()
    for child in ast.iter_child_nodes(node):
        found |= _literal_paths(child)
    return found


def _joined(node: ast.expr) -> str | None:
    """The string a `Path("/a") / "b" / "c"` expression of literals stands for, else None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords:
        return _joined(node.args[0])
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
        left, right = _joined(node.left), _joined(node.right)
        if left is not None and right is not None:
            return posixpath.join(left, right)
    return None


def _python_checks(rel: str, text: str) -> list[ReadCheck]:
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return [ReadCheck(rel, rel, paths_in(text))]
    names: dict[str, set[str]] = {}
    tests: list[tuple[str, ast.AST]] = []
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name) and node.value is not None:
                    names[target.id] = _literal_paths(node.value)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test"):
            tests.append((node.name, node))
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and item.name.startswith("test"):
                    tests.append((f"{node.name}::{item.name}", item))
    if not tests:
        return [ReadCheck(rel, rel, _literal_paths(tree))]
    checks = []
    for name, fn in tests:
        paths = _literal_paths(fn)
        for sub in ast.walk(fn):
            if isinstance(sub, ast.Name) and sub.id in names:
                paths |= names[sub.id]
        checks.append(ReadCheck(f"{rel}::{name}", rel, paths))
    return checks
