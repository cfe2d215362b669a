"""What a task's scripts use of a userland: the programs its shell runs and the Python modules it imports.

`--backend auto` sends a task to bwrap (the host's own root, read-only) only where the host stands for the
image docker would run; the host has many programs and modules the offline base image lacks (git, gcc, curl,
the host's Python packages), and a task that uses one would pass on bwrap where its image fails. So the choice
compares what the task's files name (`task_uses`) with what each userland has (`Userland`).

Read conservatively: a word in command position of a shell script or a Dockerfile `RUN`, the first word of a
Python string (a `subprocess` argument), and every module a Python file imports. A word that is no program at
all costs nothing (it is compared with the programs one userland has and the other lacks); a program missed
here would make a verdict depend on the backend, so when in doubt a word counts.
"""

from __future__ import annotations

import ast
import functools
import json
import os
import re
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

MAX_FILE_BYTES = 512 * 1024
MAX_FILES = 400
PATH_DIRS = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")
SHELL_SUFFIXES = (".sh", ".bash")
_WORD = re.compile(r"[A-Za-z_][\w.+-]*")
_COMMAND_START = re.compile(
    r"(?:^|[;&|({`]|\$\(|\b(?:if|elif|while|until|then|do|else|exec|xargs|sudo|env|nohup|setsid|time)\b|\btimeout\s+\S+)\s*"
)
_ASSIGN = re.compile(r"^[A-Za-z_]\w*=\S*\s+")
LIST_SCRIPT = (
    "import json, os, pkgutil, sys\n"
    f"dirs = {PATH_DIRS!r}\n"
    "progs = set()\n"
    "for d in dirs:\n"
    "    try:\n"
    "        progs.update(n for n in os.listdir(d) if os.access(os.path.join(d, n), os.X_OK))\n"
    "    except OSError:\n"
    "        pass\n"
    "mods = {m.name for m in pkgutil.iter_modules()} | set(sys.builtin_module_names)\n"
    "print(json.dumps({'programs': sorted(progs), 'modules': sorted(mods)}))\n"
)
"""Run by a userland's own `python3`: its programs on PATH and its top-level modules, as JSON."""


@dataclass(frozen=True)
class Userland:
    programs: frozenset[str]
    modules: frozenset[str]

    @classmethod
    def from_json(cls, text: str) -> Userland:
        data = json.loads(text)
        return cls(programs=frozenset(data["programs"]), modules=frozenset(data["modules"]))


@dataclass(frozen=True)
class TaskUses:
    commands: frozenset[str]
    imports: frozenset[str]


@functools.cache
def host_userland(python: str) -> Userland | None:
    """The host's programs on a sandbox PATH and the modules of the host Python `python` (the interpreter
    bwrap sandboxes run, with its site packages); None when it cannot be listed."""
    try:
        done = subprocess.run([python, "-I", "-c", LIST_SCRIPT], capture_output=True, text=True, timeout=60)
        return Userland.from_json(done.stdout) if done.returncode == 0 else None
    except (OSError, subprocess.SubprocessError, ValueError, KeyError):
        return None


def task_uses(folders: Iterable[Path]) -> TaskUses:
    """The programs and modules the files under `folders` (a task's environment, solution and tests) name."""
    commands: set[str] = set()
    imports: set[str] = set()
    seen = 0
    for folder in folders:
        if not folder.is_dir():
            continue
        for path in sorted(folder.rglob("*")):
            if seen >= MAX_FILES:
                break
            if any(part.startswith(".") for part in path.relative_to(folder).parts):
                continue
            if path.is_symlink() or not path.is_file() or path.stat().st_size > MAX_FILE_BYTES:
                continue
            seen += 1
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            if path.suffix == ".py" or (text.startswith("#!") and "python" in text.split("\n", 1)[0]):
                _python_uses(text, commands, imports)
            elif path.suffix in SHELL_SUFFIXES or path.name == "Dockerfile" or text.startswith("#!"):
                commands |= shell_commands(text)
    return TaskUses(commands=frozenset(commands), imports=frozenset(imports))


def shell_commands(text: str) -> set[str]:
    """Words in command position of shell text (or a Dockerfile's lines): after a line start, `;`, `&&`,
    `|`, `$(`, `then`, `do`, `sudo`, `xargs`, ...; a path's last part (`/usr/bin/git` is `git`)."""
    found: set[str] = set()
    for raw in text.replace("\\\n", " ").splitlines():
        line = raw.split(" #", 1)[0].strip()
        if line.startswith("#"):
            continue
        line = re.sub(r"^(RUN|CMD|ENTRYPOINT)\s+", "", line)
        for start in _COMMAND_START.finditer(line):
            rest = line[start.end() :].lstrip("!( ")
            while (assign := _ASSIGN.match(rest)) is not None:
                rest = rest[assign.end() :]
            token = rest.split(maxsplit=1)[0] if rest.split() else ""
            name = os.path.basename(token.strip("\"'"))
            if _WORD.fullmatch(name):
                found.add(name)
    return found


def _python_uses(text: str, commands: set[str], imports: set[str]) -> None:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imports.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            imports.add(node.module.split(".")[0])
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.strip():
            commands |= shell_commands(node.value)


def host_only(uses: TaskUses, host: Userland, image: Userland) -> list[str]:
    """What the task names that the host has and the image lacks (sorted; modules as `import x`)."""
    programs = sorted((uses.commands & host.programs) - image.programs)
    modules = sorted((uses.imports & host.modules) - image.modules)
    return programs + [f"import {m}" for m in modules]
