"""An in-memory fake of the `Sandbox` protocol for fast unit tests, held to the real backends' contract by
tests/test_sandbox_contract.py (the same cases on fake, bwrap and docker).

Nothing here starts a process or touches the host's files but through `put`/`get_dir` (and the build
context): the file system is a tree of Python objects, commands run in a small shell interpreted in
Python, and time is virtual (a `sleep` advances a clock; no real time passes).

Files: folders, regular files (bytes and a mode, an owner uid) and symlinks, resolved in container space: `..`
stops at `/`, an absolute link target restarts from the fake's own `/`, so nothing can reach the host.
The image starts from a skeleton (/bin, /dev/null, /etc with passwd/group/hostname, /home, /opt, /root,
/sbin, /tmp, /usr/bin, /usr/local/bin, /usr/sbin, /var/tmp). Permissions are recorded (`test -r/-w/-x`
answers from them) but never enforced, except that running a file by path needs an x bit.

Image: the Dockerfile is planned by `qaflow.sandbox.dockerfile` (as bwrap does): WORKDIR, ENV, ARG,
COPY/ADD (from the context, `.dockerignore` and `--chmod` honoured), RUN (through this shell, SHELL
honoured by name); FROM is ignored. A RUN that fails is a `BuildError` with the log; one that needs
something outside the subset is an `UnsupportedError`. Nothing is cached.

Shell subset (`exec` of a string; `sh`/`bash` scripts, `-c`, and files run by path or found on PATH
whose first line is a `#!` to sh/bash/dash, or `#!/usr/bin/env` of one, or that have none):
- words: single quotes, double quotes, backslash escapes, `$VAR`, `${VAR}`, `${VAR:-w}`, `${VAR-w}`,
  `${VAR:+w}`, `${VAR+w}`, `${#VAR}`, `$?`, `$#`, `$@`, `"$@"`, `$*`, `$0`..`$9`, `$$`, `$(...)`, `~`, field
  splitting of unquoted expansions on `IFS` (whitespace and other delimiters, as sh does), and `*`, `?` and
  `[...]` globs (sorted; a pattern that matches nothing stays as it is);
- `;`, newlines, `&&`, `||`, `!`, `|` (stages run one after the other, each stage's stdout the next
  one's stdin), a trailing `&` (background), `( ... )`, `{ ...; }`, `if/elif/else/fi`,
  `for NAME [in WORDS]; do ...; done`, `while`/`until` (a loop that spins 10000 times without a `sleep` fails),
  `# comments`, here-documents (`<<`, `<<-`, quoted delimiters);
- redirections `>`, `>|`, `>>`, `<`, `N>`, `N>>`, `N>&M` (`2>&1`, `>&2`), `&>`/`&>>` in bash only (in sh,
  `&>` is `&` then `>`, as dash reads it), `/dev/null`, `/dev/stdout`, `/dev/stderr`;
- builtins: `:`, `true`, `false`, `echo` (-n; sh's echo expands backslash escapes, bash's only with -e),
  `printf` (%s %d %i %u %x %X %o %c %f %b %%, flags, width, precision, `\\` escapes, the format reused
  for extra arguments), `cat`, `mkdir [-p] [-m MODE]`, `ln -s[f][n]`, `rm [-rRf]`, `touch`, `chmod [-R]`
  (octal or symbolic), `ls [-A] [-a] [-1]` (one name per line, sorted), `wc -l|-c|-w`,
  `head [-n N|-N|-c N]`, `tail [-n N|-n +N|-N]`, `cp [-rRapf]`, `mv [-f]`, `basename`, `dirname`,
  `find PATH... [-mindepth N] [-maxdepth N] [-type f|d|l] [-name PAT] [-print] [-delete]` (sorted, not in
  directory order), `pwd`, `cd`, `id [-u|-g|-n] [USER]`, `exit [N]`, `export`, `unset`, `set` (-e, -u,
  -o pipefail in bash only as dash has none, their `+` forms, `--`), `shift`, `.`/`source`, `exec CMD`,
  `env [K=V...] [CMD]`, `command [-v] CMD`, `read [-r] NAME...` (always raw), `umask` (0022, not settable),
  `test`/`[ ]` (-e -f -d -L -h -s -r -w -x -n -z, = == !=, -eq -ne -lt -le -gt -ge, !),
  `sleep N[smhd]`/`infinity`, `timeout N CMD` (exit 124), `wait`, `sh`/`bash`/`dash [-eu] [-o pipefail]
  [-c CMD [NAME ARGS] | FILE ARGS]`, `setsid CMD`, `nohup CMD`.
- Python programs: `FakeBackend.programs` (or a sandbox's `programs`) maps a command name to a callable
  `(box, argv, stdin bytes, env, cwd) -> (exit code, stdout bytes, stderr bytes)`; a program shadows a
  builtin of its name, and serves a `#!` line naming it (`#!/usr/bin/env python3`).

Anything outside the subset fails loudly and ends the whole exec: a construct the parser does not know
(`case`, functions, backticks, `$((...))`, `[[`-style bash syntax it can see, brace expansion in bash)
exits 2, an unknown command 127, an unsupported option of a builtin 2, each with a stderr line
starting `fake sandbox:` naming it. A file that really is missing (a path with a slash) fails as in sh
(127, the script goes on).

Processes: a command sent to the background (`&`) runs at once up to its first `sleep`, then waits in a
process table (one process per background job, however many a real shell would fork) until virtual
time reaches its wake-up: a foreground `sleep` (or `wait`) in a later exec advances the clock and
resumes every job due. `settle`, `kill_strays`, `exec(kill_strays_after=True)` and a timeout (the jobs
the timed-out exec started) kill them like the real backends. A foreground `sleep` reaching the
exec's timeout returns `timed_out=True`, exit code 137 and `duration_s` equal to the timeout.
`Limits.output_bytes` caps each stream (with the truncated flags); no other limit applies.

Users: `user` is root/0 (uid 0), nobody/65534 or any number; `id -u` answers it.
"""

from __future__ import annotations

import contextlib
import errno
import fnmatch
import itertools
import math
import os
import posixpath
import re
import stat
import weakref
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any, ClassVar, Self

from qaflow.errors import BuildError, SandboxError, UnsupportedError
from qaflow.sandbox.base import CappedBuffer, ExecResult, SandboxSpec, settled_exec
from qaflow.sandbox.dockerfile import BuildPlan, Copy, MakeDir, Run, plan_build
from qaflow.trial.guard import GUARD_DIR

Program = Callable[["FakeSandbox", list[str], bytes, dict[str, str], str], tuple[int, bytes, bytes]]
"""A scripted command: (box, argv, stdin, env, cwd) -> (exit code, stdout, stderr)."""

BASE_ENV = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root", "LANG": "C.UTF-8"}
USERS = {"root": 0, "nobody": 65534}
NAMES = {uid: name for name, uid in USERS.items()}
TIMEOUT_EXIT = 137
"""What the real backends report for a command the timeout killed (SIGKILL)."""
BIN_DIRS = frozenset({"/bin", "/sbin", "/usr/bin", "/usr/sbin", "/usr/local/bin", "/usr/local/sbin"})
MAX_LINKS = 40
MAX_SPINS = 10_000
UMASK = 0o022
SPECIAL_FILES = frozenset({"/dev/null", "/dev/stdin", "/dev/stdout", "/dev/stderr"})

Gen = Generator[float, None, int]
"""A running command: yields the seconds it sleeps (virtual time), returns its exit status."""


# ---------------------------------------------------------------------------------------------------
# the file system


class _Node:
    __slots__ = ("mode", "uid")

    def __init__(self, mode: int, uid: int = 0):
        self.mode = mode
        self.uid = uid


class _Dir(_Node):
    __slots__ = ("entries",)

    def __init__(self, mode: int = 0o755, uid: int = 0):
        super().__init__(mode, uid)
        self.entries: dict[str, _Node] = {}


class _File(_Node):
    __slots__ = ("data",)

    def __init__(self, data: bytes = b"", mode: int = 0o644, uid: int = 0):
        super().__init__(mode, uid)
        self.data = bytearray(data)


class _Link(_Node):
    __slots__ = ("target",)

    def __init__(self, target: str, uid: int = 0):
        super().__init__(0o777, uid)
        self.target = target


class _Null(_Node):
    """/dev/null: reads nothing, swallows writes."""

    __slots__ = ()


@dataclass
class _Found:
    parent: _Dir
    name: str
    node: _Node | None
    path: str
    """The canonical container path (links resolved, but the last one when not followed)."""


def _clone(node: _Node) -> _Node:
    if isinstance(node, _Dir):
        copy = _Dir(node.mode, node.uid)
        copy.entries = {name: _clone(child) for name, child in node.entries.items()}
        return copy
    if isinstance(node, _File):
        return _File(bytes(node.data), node.mode, node.uid)
    if isinstance(node, _Link):
        return _Link(node.target, node.uid)
    return _Null(node.mode, node.uid)


def _err(code: int, path: str) -> OSError:
    kinds: dict[int, type[OSError]] = {
        errno.ENOENT: FileNotFoundError,
        errno.ENOTDIR: NotADirectoryError,
        errno.EISDIR: IsADirectoryError,
        errno.EEXIST: FileExistsError,
    }
    return kinds.get(code, OSError)(code, os.strerror(code), path)


class FakeFS:
    """A container file system in memory; every path is absolute, links are resolved inside it."""

    def __init__(self) -> None:
        self.root = _Dir(0o755)

    def clone(self) -> FakeFS:
        copy = FakeFS()
        root = _clone(self.root)
        assert isinstance(root, _Dir)
        copy.root = root
        return copy

    def find(self, path: str, *, follow: bool = True) -> _Found:
        """Where `path` is: its folder, last name and node (None when missing).

        Raises:
            FileNotFoundError, NotADirectoryError: a folder on the way is missing or not one.
            OSError: ELOOP for a link loop.
        """
        if not path.startswith("/"):
            raise _err(errno.ENOENT, path)
        follow = follow or path.endswith("/")
        todo = [p for p in reversed(path.split("/")) if p not in ("", ".")]
        stack: list[tuple[str, _Dir]] = [("", self.root)]
        hops = 0
        while todo:
            name = todo.pop()
            if name == "..":
                if len(stack) > 1:
                    stack.pop()
                continue
            here = stack[-1][1]
            node = here.entries.get(name)
            last = not todo
            if isinstance(node, _Link) and (follow or not last):
                hops += 1
                if hops > MAX_LINKS:
                    raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), path)
                if node.target.startswith("/"):
                    del stack[1:]
                todo.extend(p for p in reversed(node.target.split("/")) if p not in ("", "."))
                continue
            if last:
                return _Found(here, name, node, "/" + "/".join([n for n, _ in stack[1:]] + [name]))
            if node is None:
                raise _err(errno.ENOENT, path)
            if not isinstance(node, _Dir):
                raise _err(errno.ENOTDIR, path)
            stack.append((name, node))
        name, top = stack[-1]
        parent = stack[-2][1] if len(stack) > 1 else self.root
        return _Found(parent, name, top, "/" + "/".join(n for n, _ in stack[1:]))

    def lookup(self, path: str, *, follow: bool = True) -> _Node | None:
        """The node at `path`, None when it (or a folder on the way) is missing."""
        try:
            return self.find(path, follow=follow).node
        except OSError:
            return None

    def folder(self, path: str) -> _Dir:
        node = self.find(path).node
        if node is None:
            raise _err(errno.ENOENT, path)
        if not isinstance(node, _Dir):
            raise _err(errno.ENOTDIR, path)
        return node

    def read(self, path: str) -> bytes:
        node = self.find(path).node
        if node is None:
            raise _err(errno.ENOENT, path)
        if isinstance(node, _Dir):
            raise _err(errno.EISDIR, path)
        return bytes(node.data) if isinstance(node, _File) else b""

    def open_file(self, path: str, *, uid: int = 0, append: bool = False) -> _File | _Null:
        """The file `path` for writing (created 0644, else emptied unless `append`); links are followed."""
        found = self.find(path)
        if found.node is None:
            if not found.name:
                raise _err(errno.EISDIR, path)
            new = _File(mode=0o666 & ~UMASK, uid=uid)
            found.parent.entries[found.name] = new
            return new
        if isinstance(found.node, _Dir):
            raise _err(errno.EISDIR, path)
        if isinstance(found.node, _File) and not append:
            found.node.data.clear()
        assert isinstance(found.node, _File | _Null)
        return found.node

    def write(self, path: str, data: bytes, *, mode: int = 0o644, uid: int = 0) -> None:
        """Create or replace the regular file `path` (a link there is replaced, never followed)."""
        found = self.find(path, follow=False)
        if isinstance(found.node, _Dir) or not found.name:
            raise _err(errno.EISDIR, path)
        found.parent.entries[found.name] = _File(data, mode, uid)

    def mkdir(self, path: str, *, mode: int = 0o755, uid: int = 0) -> _Dir:
        found = self.find(path, follow=False)
        if found.node is not None:
            raise _err(errno.EEXIST, path)
        new = _Dir(mode, uid)
        found.parent.entries[found.name] = new
        return new

    def makedirs(self, path: str, *, mode: int = 0o755, uid: int = 0) -> _Dir:
        """The folder `path`, created with its missing parents."""
        try:
            found = self.find(path)
        except FileNotFoundError:
            self.makedirs(posixpath.dirname(path.rstrip("/")) or "/", mode=mode, uid=uid)
            found = self.find(path)
        if found.node is None:
            new = _Dir(mode, uid)
            found.parent.entries[found.name] = new
            return new
        if not isinstance(found.node, _Dir):
            raise _err(errno.EEXIST, path)
        return found.node

    def remove(self, path: str) -> bool:
        """Remove `path` (a folder with its contents; a link, never what it points to); False when missing."""
        try:
            found = self.find(path.rstrip("/") or "/", follow=False)
        except OSError:
            return False
        if found.node is None:
            return False
        if not found.name:
            raise _err(errno.EBUSY, path)
        del found.parent.entries[found.name]
        return True

    def copy_in(
        self,
        src: Path,
        path: str,
        *,
        chmod: int | None = None,
        skip: Callable[[Path], bool] | None = None,
    ) -> None:
        """Copy a host file to the file `path`, or a host folder's contents into the folder `path` (modes kept,
        links copied as links, a new folder `path` gets the host folder's mode)."""
        if src.is_dir() and not src.is_symlink():
            fresh = self.lookup(path) is None
            top = self.makedirs(path)
            if fresh:
                top.mode = chmod if chmod is not None else stat.S_IMODE(src.stat().st_mode)
            for entry in sorted(src.iterdir()):
                if skip is not None and skip(entry):
                    continue
                target = f"{path.rstrip('/')}/{entry.name}"
                if entry.is_symlink():
                    self.remove(target)
                    found = self.find(target, follow=False)
                    found.parent.entries[found.name] = _Link(os.readlink(entry))
                else:
                    self.copy_in(entry, target, chmod=chmod, skip=skip)
            return
        self.makedirs(posixpath.dirname(path.rstrip("/")) or "/")
        if src.is_symlink():
            self.remove(path)
            found = self.find(path, follow=False)
            found.parent.entries[found.name] = _Link(os.readlink(src))
            return
        mode = chmod if chmod is not None else stat.S_IMODE(src.stat().st_mode)
        self.write(path, src.read_bytes(), mode=mode)

    def copy_out(self, path: str, dest: Path) -> None:
        """Copy the folder `path` into the host folder `dest` (links stay links, setuid bits dropped)."""
        node = self.find(path).node
        if node is None:
            raise _err(errno.ENOENT, path)
        if not isinstance(node, _Dir):
            raise _err(errno.ENOTDIR, path)
        _write_out(node, dest)


def _write_out(folder: _Dir, dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    for name, node in sorted(folder.entries.items()):
        target = dest / name
        if isinstance(node, _Dir):
            _write_out(node, target)
        elif isinstance(node, _Link):
            if target.is_symlink() or target.exists():
                target.unlink()
            target.symlink_to(node.target)
        elif isinstance(node, _File):
            target.write_bytes(bytes(node.data))
            target.chmod(node.mode & 0o1777)
    dest.chmod(folder.mode & 0o1777)


def skeleton() -> FakeFS:
    """The base image's file system: the few folders and files every sandbox starts with."""
    fs = FakeFS()
    for path, mode in [
        ("/bin", 0o755),
        ("/dev", 0o755),
        ("/etc", 0o755),
        ("/home", 0o755),
        ("/opt", 0o755),
        ("/root", 0o700),
        ("/sbin", 0o755),
        ("/tmp", 0o1777),
        ("/usr/bin", 0o755),
        ("/usr/local/bin", 0o755),
        ("/usr/sbin", 0o755),
        ("/var/tmp", 0o1777),
    ]:
        fs.makedirs(path).mode = mode
    fs.folder("/dev").entries["null"] = _Null(0o666)
    fs.write("/etc/passwd", b"root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n")
    fs.write("/etc/group", b"root:x:0:\nnogroup:x:65534:\n")
    fs.write("/etc/hostname", b"fake\n")
    return fs


# ---------------------------------------------------------------------------------------------------
# the shell: tokens and syntax tree


class _Unsupported(Exception):
    """Outside the subset: ends the whole exec with `code` and a `fake sandbox:` line."""

    def __init__(self, message: str, code: int):
        super().__init__(message)
        self.message = message
        self.code = code


class _Exit(Exception):
    """The current shell process ends (exit, set -e, a fatal expansion error) with `code`."""

    def __init__(self, code: int, message: str | None = None):
        super().__init__(code)
        self.code = code & 0xFF
        self.message = message


class _Timeout(Exception):
    pass


def _syntax(message: str) -> _Unsupported:
    return _Unsupported(f"syntax error or unsupported syntax: {message}", 2)


@dataclass
class _Part:
    kind: str
    """lit (text), var ((name, op, default word)), sub (a parsed command), tilde."""
    value: Any
    quoted: bool


@dataclass
class _Word:
    parts: list[_Part]
    raw: str

    def plain(self) -> str | None:
        """The word's text when it is one unquoted literal (how reserved words are recognised)."""
        if len(self.parts) == 1 and self.parts[0].kind == "lit" and not self.parts[0].quoted:
            return str(self.parts[0].value)
        return None

    def literal(self) -> str | None:
        """The text when only literals make it up (a here-document's delimiter)."""
        if all(p.kind == "lit" for p in self.parts):
            return "".join(str(p.value) for p in self.parts)
        return None

    def assignment(self) -> tuple[str, _Word] | None:
        first = self.parts[0] if self.parts else None
        if first is None or first.kind != "lit" or first.quoted:
            return None
        match = re.match(r"([A-Za-z_][A-Za-z0-9_]*)=", first.value)
        if not match:
            return None
        rest = first.value[match.end() :]
        parts = ([_Part("lit", rest, False)] if rest else []) + self.parts[1:]
        return match.group(1), _Word(parts or [_Part("lit", "", True)], self.raw[match.end() :])


@dataclass
class _Heredoc:
    delimiter: str
    strip_tabs: bool
    quoted: bool
    body: _Word | None = None


@dataclass
class _Redir:
    fd: int
    op: str
    target: _Word | None = None
    heredoc: _Heredoc | None = None


@dataclass
class _Tok:
    kind: str
    """word, op, nl, eof."""
    value: str = ""
    word: _Word | None = None
    fd: int | None = None
    heredoc: _Heredoc | None = None


@dataclass
class _Simple:
    assigns: list[tuple[str, _Word]]
    words: list[_Word]
    redirs: list[_Redir]


@dataclass
class _Pipeline:
    cmds: list[Any]
    negate: bool = False


@dataclass
class _AndOr:
    first: _Pipeline
    rest: list[tuple[str, _Pipeline]] = field(default_factory=list)


@dataclass
class _Seq:
    items: list[tuple[_AndOr, bool]]


@dataclass
class _Group:
    body: _Seq
    subshell: bool
    redirs: list[_Redir] = field(default_factory=list)


@dataclass
class _If:
    branches: list[tuple[_Seq, _Seq]]
    orelse: _Seq | None
    redirs: list[_Redir] = field(default_factory=list)


@dataclass
class _For:
    name: str
    words: list[_Word] | None
    body: _Seq
    redirs: list[_Redir] = field(default_factory=list)


@dataclass
class _While:
    cond: _Seq
    body: _Seq
    until: bool
    redirs: list[_Redir] = field(default_factory=list)


_OPS = ("&&", "||", ";;", "<<-", "<<", ">>", ">&", "<&", ">|", "<>", ";", "&", "|", "(", ")", "<", ">")
_BASH_OPS = ("&>>", "&>", *_OPS)
_REDIR_OPS = frozenset({">", ">>", ">|", "<", "<<", "<<-", ">&", "<&", "<>", "&>", "&>>"})
_META = " \t\n;&|()<>"
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_PARAM = re.compile(r"([A-Za-z_][A-Za-z0-9_]*|[0-9]+|[?#@*$])(?:(:?[-+=?])(.*))?", re.DOTALL)
_END_WORDS = frozenset({"then", "elif", "else", "fi", "do", "done", "}", "esac"})


class _Lexer:
    """Source text to tokens (words keep their quoting as parts); here-document bodies are read at each newline."""

    def __init__(self, src: str, bash: bool):
        self.src = src
        self.bash = bash
        self.i = 0
        self.pending: list[_Heredoc] = []

    def tokens(self) -> list[_Tok]:
        src, out = self.src, []
        ops = _BASH_OPS if self.bash else _OPS
        while self.i < len(src):
            c = src[self.i]
            if c in " \t":
                self.i += 1
            elif src.startswith("\\\n", self.i):
                self.i += 2
            elif c == "#":
                end = src.find("\n", self.i)
                self.i = len(src) if end == -1 else end
            elif c == "\n":
                self.i += 1
                out.append(_Tok("nl"))
                self._bodies()
            elif (op := next((o for o in ops if src.startswith(o, self.i)), None)) is not None:
                self.i += len(op)
                out.append(self._operator(op, None))
            else:
                word = self._word()
                nxt = src[self.i : self.i + 1]
                if word.raw.isdigit() and nxt in ("<", ">"):
                    op = next(o for o in ops if src.startswith(o, self.i))
                    self.i += len(op)
                    out.append(self._operator(op, int(word.raw)))
                else:
                    out.append(_Tok("word", word.raw, word))
        if self.pending:
            self._bodies()
        out.append(_Tok("eof"))
        return out

    def _operator(self, op: str, fd: int | None) -> _Tok:
        if op in ("<<", "<<-"):
            while self.src[self.i : self.i + 1] in (" ", "\t"):
                self.i += 1
            word = self._word()
            delimiter = word.literal()
            if not word.raw or delimiter is None:
                raise _syntax(f"here-document delimiter {word.raw!r}")
            doc = _Heredoc(delimiter, op == "<<-", any(p.quoted for p in word.parts))
            self.pending.append(doc)
            return _Tok("op", op, fd=fd, heredoc=doc)
        return _Tok("op", op, fd=fd)

    def _bodies(self) -> None:
        """Read the bodies of the here-documents begun on the line that just ended."""
        for doc in self.pending:
            lines = []
            while self.i < len(self.src):
                end = self.src.find("\n", self.i)
                line = self.src[self.i : len(self.src) if end == -1 else end]
                self.i = len(self.src) if end == -1 else end + 1
                if doc.strip_tabs:
                    line = line.lstrip("\t")
                if line == doc.delimiter:
                    break
                lines.append(line + "\n")
            text = "".join(lines)
            if doc.quoted:
                doc.body = _Word([_Part("lit", text, True)], text)
            else:
                doc.body = _Lexer(text, self.bash)._quoted_text(heredoc=True)
        self.pending = []

    def _word(self) -> _Word:
        src, start = self.src, self.i
        parts: list[_Part] = []
        buf: list[str] = []

        def flush() -> None:
            if buf:
                text = "".join(buf)
                if self.bash and re.search(r"\{[^{}\s]*(,|\.\.)[^{}\s]*\}", text):
                    raise _syntax(f"brace expansion {text!r}")
                parts.append(_Part("lit", text, False))
                buf.clear()

        while self.i < len(src):
            c = src[self.i]
            if c in _META:
                break
            if c == "\\":
                if src.startswith("\\\n", self.i):
                    self.i += 2
                    continue
                flush()
                parts.append(_Part("lit", src[self.i + 1 : self.i + 2] or "\\", True))
                self.i += 2
            elif c == "'":
                end = src.find("'", self.i + 1)
                if end == -1:
                    raise _syntax("unterminated single quote")
                flush()
                parts.append(_Part("lit", src[self.i + 1 : end], True))
                self.i = end + 1
            elif c == '"':
                flush()
                parts.extend(self._double_quoted())
            elif c == "$":
                flush()
                parts.append(self._dollar(quoted=False))
            elif c == "`":
                raise _syntax("backquote command substitution (use $(...))")
            elif c == "~" and self.i == start and src[self.i + 1 : self.i + 2] in ("", "/", *_META):
                parts.append(_Part("tilde", "", False))
                self.i += 1
            else:
                buf.append(c)
                self.i += 1
        flush()
        return _Word(parts, src[start : self.i])

    def _double_quoted(self) -> list[_Part]:
        self.i += 1
        word = self._quoted_text(heredoc=False)
        if self.src[self.i : self.i + 1] != '"':
            raise _syntax("unterminated double quote")
        self.i += 1
        return word.parts or [_Part("lit", "", True)]

    def _quoted_text(self, *, heredoc: bool) -> _Word:
        """Double-quoted text up to the closing quote (or, for a here-document body, the end)."""
        src, start = self.src, self.i
        parts: list[_Part] = []
        buf: list[str] = []
        specials = "$`\\\n" if heredoc else '$`"\\\n'
        while self.i < len(src):
            c = src[self.i]
            if c == '"' and not heredoc:
                break
            if c == "\\" and src[self.i + 1 : self.i + 2] and src[self.i + 1] in specials:
                if src[self.i + 1] != "\n":
                    buf.append(src[self.i + 1])
                self.i += 2
            elif c == "$":
                if buf:
                    parts.append(_Part("lit", "".join(buf), True))
                    buf.clear()
                parts.append(self._dollar(quoted=True))
            elif c == "`":
                raise _syntax("backquote command substitution (use $(...))")
            else:
                buf.append(c)
                self.i += 1
        if buf:
            parts.append(_Part("lit", "".join(buf), True))
        return _Word(parts, src[start : self.i])

    def _dollar(self, *, quoted: bool) -> _Part:
        src, i = self.src, self.i
        nxt = src[i + 1 : i + 2]
        if nxt == "(":
            if src.startswith("((", i + 1):
                raise _syntax("arithmetic expansion $((...))")
            end = _closing_paren(src, i + 2)
            self.i = end + 1
            return _Part("sub", parse_script(src[i + 2 : end], self.bash), quoted)
        if nxt == "{":
            end = src.find("}", i + 2)
            if end == -1:
                raise _syntax("unterminated ${")
            body = src[i + 2 : end]
            self.i = end + 1
            length = re.fullmatch(r"#([A-Za-z_][A-Za-z0-9_]*)", body)
            if length:
                return _Part("var", (length.group(1), "#", None), quoted)
            match = _PARAM.fullmatch(body)
            if not match or (match.group(2) or "").endswith(("=", "?")):
                raise _syntax(f"parameter expansion ${{{body}}}")
            name, op, default = match.groups()
            word = None
            if op is not None:
                sub = _Lexer(default, self.bash)
                word = sub._quoted_text(heredoc=True) if quoted else sub._whole_word()
            return _Part("var", (name, op, word), quoted)
        match = _NAME.match(src, i + 1)
        if match:
            self.i = match.end()
            return _Part("var", (match.group(0), None, None), quoted)
        if nxt and (nxt.isdigit() or nxt in "?#@*$"):
            self.i = i + 2
            return _Part("var", (nxt, None, None), quoted)
        if nxt and (nxt in "!-" or (self.bash and nxt in "'\"")):
            raise _syntax(f"${nxt}")
        self.i = i + 1
        return _Part("lit", "$", quoted)

    def _whole_word(self) -> _Word:
        """The rest of the text as one unquoted word (a `${X:-word}` default), blanks included."""
        parts: list[_Part] = []
        while self.i < len(self.src):
            before = self.i
            word = self._word()
            parts.extend(word.parts)
            if self.i == before:
                parts.append(_Part("lit", self.src[self.i], True))
                self.i += 1
        return _Word(parts, self.src)


def _closing_paren(src: str, i: int) -> int:
    """The index of the `)` closing a `$(` whose body starts at `i`."""
    depth = 1
    while i < len(src):
        c = src[i]
        if c == "\\":
            i += 2
            continue
        if c == "'":
            end = src.find("'", i + 1)
            if end == -1:
                raise _syntax("unterminated single quote")
            i = end + 1
            continue
        if c == '"':
            i += 1
            while i < len(src) and src[i] != '"':
                if src[i] == "\\":
                    i += 1
                elif src.startswith("$(", i):
                    i = _closing_paren(src, i + 2)
                i += 1
            i += 1
            continue
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    raise _syntax("unterminated $(")


class _Parser:
    def __init__(self, toks: list[_Tok]):
        self.toks = toks
        self.i = 0

    def peek(self) -> _Tok:
        return self.toks[self.i]

    def take(self) -> _Tok:
        tok = self.toks[self.i]
        self.i += 1
        return tok

    def is_word(self, tok: _Tok, *names: str) -> bool:
        return tok.kind == "word" and tok.word is not None and tok.word.plain() in names

    def is_op(self, tok: _Tok, *ops: str) -> bool:
        return tok.kind == "op" and tok.value in ops

    def expect_word(self, name: str) -> None:
        tok = self.take()
        if not self.is_word(tok, name):
            raise _syntax(f"expected {name!r}, found {_describe(tok)}")

    def skip_nl(self) -> None:
        while self.peek().kind == "nl":
            self.i += 1

    def program(self) -> _Seq:
        seq = self.seq(allow_empty=True)
        if self.peek().kind != "eof":
            raise _syntax(f"unexpected {_describe(self.peek())}")
        return seq

    def seq(self, *, allow_empty: bool = False) -> _Seq:
        items: list[tuple[_AndOr, bool]] = []
        while True:
            self.skip_nl()
            tok = self.peek()
            if tok.kind == "eof" or self.is_op(tok, ")") or self.is_word(tok, *_END_WORDS):
                break
            node = self.and_or()
            tok = self.peek()
            if self.is_op(tok, ";", "&"):
                self.take()
                items.append((node, tok.value == "&"))
                continue
            items.append((node, False))
            if tok.kind != "nl":
                break
        if not items and not allow_empty:
            raise _syntax(f"empty command list before {_describe(self.peek())}")
        return _Seq(items)

    def and_or(self) -> _AndOr:
        node = _AndOr(self.pipeline())
        while self.is_op(self.peek(), "&&", "||"):
            op = self.take().value
            self.skip_nl()
            node.rest.append((op, self.pipeline()))
        return node

    def pipeline(self) -> _Pipeline:
        negate = False
        if self.is_word(self.peek(), "!"):
            self.take()
            negate = True
        cmds = [self.command()]
        while self.is_op(self.peek(), "|"):
            self.take()
            self.skip_nl()
            cmds.append(self.command())
        return _Pipeline(cmds, negate)

    def command(self) -> Any:
        tok = self.peek()
        node: _Group | _If | _For | _While
        if self.is_op(tok, "("):
            self.take()
            body = self.seq()
            if not self.is_op(self.take(), ")"):
                raise _syntax("expected ')'")
            node = _Group(body, subshell=True)
        elif self.is_word(tok, "{"):
            self.take()
            body = self.seq()
            self.expect_word("}")
            node = _Group(body, subshell=False)
        elif self.is_word(tok, "if"):
            node = self.if_clause()
        elif self.is_word(tok, "for"):
            node = self.for_clause()
        elif self.is_word(tok, "while", "until"):
            until = self.take().value == "until"
            cond = self.seq()
            self.expect_word("do")
            body = self.seq()
            self.expect_word("done")
            node = _While(cond, body, until)
        elif self.is_word(tok, "case", "function", "select", "[[", "]]", "coproc", "in", *_END_WORDS):
            raise _syntax(f"{tok.value!r} (not in the fake shell's subset)")
        else:
            return self.simple()
        while self.peek().kind == "op" and self.peek().value in _REDIR_OPS:
            node.redirs.append(self.redirect())
        return node

    def if_clause(self) -> _If:
        self.take()
        branches = []
        cond = self.seq()
        self.expect_word("then")
        branches.append((cond, self.seq()))
        orelse = None
        while True:
            tok = self.take()
            if self.is_word(tok, "elif"):
                cond = self.seq()
                self.expect_word("then")
                branches.append((cond, self.seq()))
            elif self.is_word(tok, "else"):
                orelse = self.seq()
                self.expect_word("fi")
                break
            elif self.is_word(tok, "fi"):
                break
            else:
                raise _syntax(f"expected 'fi', found {_describe(tok)}")
        return _If(branches, orelse)

    def for_clause(self) -> _For:
        self.take()
        tok = self.take()
        name = tok.word.plain() if tok.word is not None else None
        if name is None or not _NAME.fullmatch(name):
            raise _syntax(f"bad for loop variable {_describe(tok)}")
        self.skip_nl()
        words: list[_Word] | None = None
        if self.is_word(self.peek(), "in"):
            self.take()
            words = []
            while self.peek().kind == "word":
                word = self.take().word
                assert word is not None
                words.append(word)
        if self.is_op(self.peek(), ";"):
            self.take()
        self.skip_nl()
        self.expect_word("do")
        body = self.seq()
        self.expect_word("done")
        return _For(name, words, body)

    def redirect(self) -> _Redir:
        tok = self.take()
        op = tok.value
        default_fd = 0 if op.startswith("<") else 1
        fd = tok.fd if tok.fd is not None else default_fd
        if op in ("<&", "<>"):
            raise _syntax(f"redirection {op}")
        if tok.heredoc is not None:
            return _Redir(fd, op, heredoc=tok.heredoc)
        target = self.take()
        if target.kind != "word" or target.word is None:
            raise _syntax(f"redirection {op} without a target")
        if op == ">&" and target.value not in ("0", "1", "2"):
            raise _syntax(f"redirection >&{target.value}")
        return _Redir(fd, op, target=target.word)

    def simple(self) -> _Simple:
        node = _Simple([], [], [])
        while True:
            tok = self.peek()
            if tok.kind == "word":
                self.take()
                assert tok.word is not None
                assign = None if node.words else tok.word.assignment()
                if assign is not None:
                    node.assigns.append(assign)
                    continue
                node.words.append(tok.word)
                if len(node.words) == 1 and self.is_op(self.peek(), "("):
                    raise _syntax(f"function definition {tok.value}() (not in the fake shell's subset)")
            elif tok.kind == "op" and tok.value in _REDIR_OPS:
                node.redirs.append(self.redirect())
            else:
                break
        if not (node.assigns or node.words or node.redirs):
            raise _syntax(f"unexpected {_describe(self.peek())}")
        return node


def _describe(tok: _Tok) -> str:
    return {"nl": "newline", "eof": "end of input"}.get(tok.kind) or repr(tok.value)


def parse_script(src: str, bash: bool = False) -> _Seq:
    """The syntax tree of a script. Raises _Unsupported (exit 2) for what the subset cannot parse."""
    return _Parser(_Lexer(src, bash).tokens()).program()


# ---------------------------------------------------------------------------------------------------
# the shell: streams and execution


class _In:
    def __init__(self, data: bytes = b""):
        self.data = data
        self.pos = 0

    def read(self) -> bytes:
        rest = self.data[self.pos :]
        self.pos = len(self.data)
        return rest


class _Out:
    def write(self, data: bytes) -> None:
        raise NotImplementedError


class _Sink(_Out):
    def write(self, data: bytes) -> None:
        pass


class _Collect(_Out):
    def __init__(self) -> None:
        self.buf = bytearray()

    def write(self, data: bytes) -> None:
        self.buf += data


class _Capture(_Out):
    """An exec's stdout or stderr: capped, and deaf once the exec has returned."""

    def __init__(self, limit: int):
        self.buffer = CappedBuffer(limit)
        self.open = True

    def write(self, data: bytes) -> None:
        if self.open:
            self.buffer.write(data)


class _FileOut(_Out):
    def __init__(self, node: _File):
        self.node = node

    def write(self, data: bytes) -> None:
        self.node.data += data


@dataclass
class _Fds:
    stdin: _In
    out: dict[int, _Out]

    def w(self, fd: int) -> _Out:
        return self.out.get(fd) or _Sink()

    def copy(self) -> _Fds:
        return _Fds(self.stdin, dict(self.out))


class _RedirError(Exception):
    pass


def _enc(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def _dec(data: bytes) -> str:
    return data.decode("utf-8", "surrogateescape")


_GLOB_ESCAPE = str.maketrans({"*": "[*]", "?": "[?]", "[": "[[]"})


def _has_glob(pattern: str) -> bool:
    """Whether `pattern` (quoted characters escaped as `[*]`, `[?]`, `[[]`) has a wildcard or a `[...]` class."""
    bare = re.sub(r"\[[*?[]\]", "", pattern)
    return bool(re.search(r"[*?]|\[[^]/]+\]", bare))


def _unglob(pattern: str) -> str:
    return re.sub(r"\[([*?[])\]", r"\1", pattern)


class _Shell:
    """One shell process: variables, options, cwd and user; `subshell` copies it."""

    def __init__(self, box: FakeSandbox, env: Mapping[str, str], cwd: str, uid: int, *, bash: bool, args: list[str]):
        self.box = box
        self.vars = dict(env)
        self.exported = set(env)
        self.cwd = cwd
        self.uid = uid
        self.bash = bash
        self.args = args
        self.status = 0
        self.sub_status = 0
        self.errexit = False
        self.nounset = False
        self.pipefail = False
        self.cond = 0
        self.jobs: list[_Job] = []

    # -- helpers ------------------------------------------------------------------------------------

    def subshell(self) -> _Shell:
        child = _Shell(self.box, {}, self.cwd, self.uid, bash=self.bash, args=list(self.args))
        child.vars, child.exported = dict(self.vars), set(self.exported)
        child.status, child.cond = self.status, self.cond
        child.errexit, child.nounset, child.pipefail = self.errexit, self.nounset, self.pipefail
        return child

    def process(self, *, bash: bool, args: list[str], extra: Mapping[str, str]) -> _Shell:
        """A new shell process (sh, bash, a script) with this one's environment."""
        return _Shell(self.box, self.environ(extra), self.cwd, self.uid, bash=bash, args=args)

    def environ(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        return {**{k: self.vars[k] for k in self.vars if k in self.exported}, **(extra or {})}

    def path(self, name: str) -> str:
        """The absolute container path of `name` (relative to the cwd).

        Raises:
            _Unsupported: for /proc, /sys and devices other than /dev/null and the standard streams.
        """
        if not name:
            return ""
        full = name if name.startswith("/") else f"{self.cwd.rstrip('/')}/{name}"
        norm = posixpath.normpath(full)
        if norm in SPECIAL_FILES:
            return norm
        if re.match(r"/(proc|sys|dev)(/|$)", norm):
            raise _Unsupported(f"{name}: /proc, /sys and devices (but /dev/null) are not in the fake", 2)
        return full

    @property
    def fs(self) -> FakeFS:
        return self.box.fs

    def say(self, fds: _Fds, message: str) -> None:
        fds.w(2).write(_enc(message + "\n"))

    def shell_error(self, fds: _Fds, message: str) -> None:
        prefix = f"{self.args[0]}: line 1: " if self.bash else f"{self.args[0]}: 1: "
        self.say(fds, prefix + message)

    def read_file(self, name: str, fds: _Fds) -> bytes:
        path = self.path(name)
        if path == "/dev/stdin":
            return fds.stdin.read()
        return self.fs.read(path)

    # -- scripts and lists -------------------------------------------------------------------------

    def run_script(self, text: str, fds: _Fds) -> Gen:
        tree = parse_script(text, self.bash)
        try:
            return (yield from self.run_seq(tree, fds))
        except _Exit as e:
            if e.message:
                self.shell_error(fds, e.message)
            return e.code

    def run_seq(self, seq: _Seq, fds: _Fds) -> Gen:
        status = 0
        for node, background in seq.items:
            if background:
                self.spawn(node, fds)
                status = 0
            else:
                status = yield from self.run_and_or(node, fds)
            self.status = status
        return status

    def spawn(self, node: _AndOr, fds: _Fds) -> None:
        child = self.subshell()
        child.cond = 0
        job_fds = _Fds(_In(), dict(fds.out))

        def main() -> Gen:
            try:
                return (yield from child.run_and_or(node, job_fds))
            except _Exit as e:
                return e.code

        job = self.box.start_job(main(), child.uid)
        if job is not None:
            self.jobs.append(job)

    def run_and_or(self, node: _AndOr, fds: _Fds) -> Gen:
        steps = [("", node.first), *node.rest]
        status = 0
        for k, (op, pipeline) in enumerate(steps):
            if (op == "&&" and status != 0) or (op == "||" and status == 0):
                continue
            final = k == len(steps) - 1
            self.cond += 0 if final else 1
            try:
                status = yield from self.run_pipeline(pipeline, fds)
            finally:
                self.cond -= 0 if final else 1
            self.status = status
            if final and status != 0 and self.errexit and self.cond == 0 and not pipeline.negate:
                raise _Exit(status)
        return status

    def run_pipeline(self, pipeline: _Pipeline, fds: _Fds) -> Gen:
        if pipeline.negate:
            self.cond += 1
        try:
            if len(pipeline.cmds) == 1:
                status = yield from self.run_command(pipeline.cmds[0], fds)
            else:
                stdin, statuses = fds.stdin, []
                for k, cmd in enumerate(pipeline.cmds):
                    last = k == len(pipeline.cmds) - 1
                    out = fds.w(1) if last else _Collect()
                    stage = fds.copy()
                    stage.stdin, stage.out[1] = stdin, out
                    child = self.subshell()
                    try:
                        statuses.append((yield from child.run_command(cmd, stage)))
                    except _Exit as e:
                        statuses.append(e.code)
                    if isinstance(out, _Collect):
                        stdin = _In(bytes(out.buf))
                status = statuses[-1]
                if self.pipefail:
                    status = next((s for s in reversed(statuses) if s), 0)
        finally:
            if pipeline.negate:
                self.cond -= 1
        return (0 if status else 1) if pipeline.negate else status

    def run_command(self, node: Any, fds: _Fds) -> Gen:
        if isinstance(node, _Simple):
            return (yield from self.run_simple(node, fds))
        try:
            fds = yield from self.redirect(node.redirs, fds)
        except _RedirError:
            return 1 if self.bash else 2
        if isinstance(node, _Group):
            if not node.subshell:
                return (yield from self.run_seq(node.body, fds))
            child = self.subshell()
            try:
                return (yield from child.run_seq(node.body, fds))
            except _Exit as e:
                return e.code
        if isinstance(node, _If):
            for cond, body in node.branches:
                self.cond += 1
                try:
                    passed = (yield from self.run_seq(cond, fds)) == 0
                finally:
                    self.cond -= 1
                if passed:
                    return (yield from self.run_seq(body, fds))
            return (yield from self.run_seq(node.orelse, fds)) if node.orelse is not None else 0
        if isinstance(node, _For):
            if node.words is None:
                values = self.args[1:]
            else:
                values = []
                for word in node.words:
                    values += yield from self.expand(word, fds)
            status = 0
            for value in values:
                self.vars[node.name] = value
                status = yield from self.run_seq(node.body, fds)
            return status
        assert isinstance(node, _While)
        status, spins = 0, 0
        while True:
            sleeps = self.box.sleeps
            self.cond += 1
            try:
                test = yield from self.run_seq(node.cond, fds)
            finally:
                self.cond -= 1
            if (test == 0) == node.until:
                return status
            status = yield from self.run_seq(node.body, fds)
            spins = spins + 1 if self.box.sleeps == sleeps else 0
            if spins >= MAX_SPINS:
                raise _Unsupported(f"a loop ran {MAX_SPINS} times without a sleep (it would spin forever)", 2)

    def run_simple(self, node: _Simple, fds: _Fds) -> Gen:
        self.sub_status = 0
        argv: list[str] = []
        for word in node.words:
            argv += yield from self.expand(word, fds)
        values = []
        for name, word in node.assigns:
            values.append((name, (yield from self.expand_one(word, fds))))
        try:
            fds = yield from self.redirect(node.redirs, fds)
        except _RedirError:
            return 1 if self.bash else 2
        if not argv:
            for name, value in values:
                self.vars[name] = value
            return self.sub_status
        return (yield from self.run_argv(argv, fds, dict(values)))

    # -- commands ----------------------------------------------------------------------------------

    def run_argv(self, argv: list[str], fds: _Fds, extra: Mapping[str, str]) -> Gen:
        """Run one command: a program, a builtin, or a file (by path, or found on PATH)."""
        name = argv[0]
        if name == REWARD_GUARD:
            return (yield from _fake_reward_guard(self, argv, fds, extra))
        base = posixpath.basename(name)
        on_bin = "/" not in name or (posixpath.dirname(name) in BIN_DIRS and self.fs.lookup(name) is None)
        program = self.box.programs.get(base) if on_bin else None
        if program is not None:
            return self.call_program(program, argv, fds, extra)
        if on_bin and base in _GEN_BUILTINS:
            return (yield from _GEN_BUILTINS[base](self, argv, fds, extra))
        if on_bin and base in _BUILTINS:
            if base == "read" and "IFS" in extra:  # `IFS=, read a b`: the assignment holds for that command only
                saved = self.vars.get("IFS")
                self.vars["IFS"] = extra["IFS"]
                try:
                    return _BUILTINS[base](self, argv, fds)
                finally:
                    if saved is None:
                        self.vars.pop("IFS", None)
                    else:
                        self.vars["IFS"] = saved
            return _BUILTINS[base](self, argv, fds)
        if "/" in name:
            path = self.path(name)
        else:
            found = self.which(name, extra)
            if found is None:
                raise _Unsupported(f"{name}: command not found (not a builtin, program or file on PATH)", 127)
            path = found
        return (yield from self.run_file(path, argv, fds, extra))

    def which(self, name: str, extra: Mapping[str, str] | None = None) -> str | None:
        search = (extra or {}).get("PATH", self.vars.get("PATH", ""))
        for folder in search.split(":"):
            candidate = f"{folder.rstrip('/')}/{name}"
            node = self.fs.lookup(candidate) if folder.startswith("/") else None
            if isinstance(node, _File) and node.mode & 0o111:
                return candidate
        return None

    def call_program(self, program: Program, argv: list[str], fds: _Fds, extra: Mapping[str, str]) -> int:
        code, out, err = program(self.box, list(argv), fds.stdin.read(), self.environ(extra), self.cwd)
        fds.w(1).write(out)
        fds.w(2).write(err)
        return code & 0xFF

    def run_file(self, path: str, argv: list[str], fds: _Fds, extra: Mapping[str, str]) -> Gen:
        node = self.fs.lookup(path)
        if node is None:
            self.shell_error(fds, f"{argv[0]}: not found" if not self.bash else f"{argv[0]}: No such file or directory")
            return 127
        if not isinstance(node, _File) or not node.mode & 0o111:
            self.shell_error(fds, f"{argv[0]}: Permission denied")
            return 126
        data = bytes(node.data)
        script = argv[0] if "/" in argv[0] else path
        first = data.split(b"\n", 1)[0]
        if first.startswith(b"#!"):
            words = _dec(first[2:]).split()
            if words:
                interp, iargs = words[0], words[1:]
                if posixpath.basename(interp) == "env" and iargs:
                    interp, iargs = iargs[0], iargs[1:]
                base = posixpath.basename(interp)
                if base in self.box.programs:
                    return self.call_program(self.box.programs[base], [base, *iargs, script, *argv[1:]], fds, extra)
                if base not in ("sh", "bash", "dash"):
                    raise _Unsupported(
                        f"{argv[0]}: its interpreter {interp} is not in the fake (register a program)", 127
                    )
                return (yield from _b_sh(self, [base, *iargs, script, *argv[1:]], fds, extra))
        if b"\0" in data[:4096]:
            raise _Unsupported(f"{argv[0]}: a binary file cannot run in the fake", 127)
        return (yield from _b_sh(self, ["sh", script, *argv[1:]], fds, extra))

    # -- redirections ------------------------------------------------------------------------------

    def redirect(self, redirs: list[_Redir], fds: _Fds) -> Generator[float, None, _Fds]:
        if not redirs:
            return fds
        fds = fds.copy()
        for r in redirs:
            if r.heredoc is not None:
                assert r.heredoc.body is not None
                fds.stdin = _In(_enc((yield from self.expand_one(r.heredoc.body, fds))))
                continue
            assert r.target is not None
            target = yield from self.expand_one(r.target, fds)
            if r.op == ">&":
                fds.out[r.fd] = fds.w(int(target))
                continue
            try:
                path = self.path(target)
                if r.op == "<":
                    if r.fd != 0:
                        raise _syntax(f"input redirection of fd {r.fd}")
                    fds.stdin = _In(self.read_file(target, fds))
                    continue
                out = self.open_out(path, fds, append=r.op in (">>", "&>>"))
            except OSError as e:
                missing = isinstance(e, FileNotFoundError)
                if self.bash:
                    self.shell_error(fds, f"{target}: {e.strerror}")
                elif r.op == "<":
                    self.shell_error(fds, f"cannot open {target}: {'No such file' if missing else e.strerror}")
                else:
                    self.shell_error(
                        fds, f"cannot create {target}: {'Directory nonexistent' if missing else e.strerror}"
                    )
                raise _RedirError() from e
            if r.op in ("&>", "&>>"):
                fds.out[1] = fds.out[2] = out
            else:
                fds.out[r.fd] = out
        return fds

    def open_out(self, path: str, fds: _Fds, *, append: bool) -> _Out:
        if path == "/dev/stdout":
            return fds.w(1)
        if path == "/dev/stderr":
            return fds.w(2)
        node = self.fs.open_file(path, uid=self.uid, append=append)
        return _FileOut(node) if isinstance(node, _File) else _Sink()

    # -- expansion ---------------------------------------------------------------------------------

    def expand(self, word: _Word, fds: _Fds) -> Generator[float, None, list[str]]:
        """Fields of `word`: expansions, field splitting of unquoted ones, globs."""
        fields: list[list[tuple[str, bool]]] = []
        current: list[tuple[str, bool]] | None = None
        for part in word.parts:
            if part.kind == "var" and part.value[0] == "@" and part.value[1] is None and part.quoted:
                for k, arg in enumerate(self.args[1:]):
                    if k > 0 and current is not None:
                        fields.append(current)
                        current = None
                    current = (current or []) + [(arg, False)]
                continue
            text, split = yield from self.expand_part(part, fds)
            if not split:
                current = (current or []) + [(text, part.kind == "lit" and not part.quoted)]
                continue
            pieces, leading_field = _ifs_split(text, self.vars.get("IFS", _DEFAULT_IFS))
            for k, piece in enumerate(pieces):
                if k > 0 and current is not None:
                    fields.append(current)
                    current = None
                keep = piece or (k == 0 and leading_field) or 0 < k < len(pieces) - 1
                if keep:
                    current = (current or []) + [(piece, True)]
        if current is not None:
            fields.append(current)
        out: list[str] = []
        for pieces in fields:
            text = "".join(t for t, _ in pieces)
            pattern = "".join(t if g else t.translate(_GLOB_ESCAPE) for t, g in pieces)
            matches = self.glob(pattern) if _has_glob(pattern) else []
            out += matches or [text]
        return out

    def expand_one(self, word: _Word, fds: _Fds) -> Generator[float, None, str]:
        """`word` as one string: no field splitting, no globs (assignments, redirections, here-documents)."""
        texts = []
        for part in word.parts:
            text, _ = yield from self.expand_part(part, fds)
            texts.append(text)
        return "".join(texts)

    def expand_part(self, part: _Part, fds: _Fds) -> Generator[float, None, tuple[str, bool]]:
        """(text, subject to field splitting) of one part of a word."""
        if part.kind == "lit":
            return str(part.value), False
        if part.kind == "tilde":
            return self.vars.get("HOME", "/"), False
        if part.kind == "sub":
            child = self.subshell()
            out = _Collect()
            sub_fds = fds.copy()
            sub_fds.out[1] = out
            try:
                status = yield from child.run_seq(part.value, sub_fds)
            except _Exit as e:
                status = e.code
                if e.message:
                    child.shell_error(fds, e.message)
            self.sub_status = self.status = status
            return _dec(bytes(out.buf)).rstrip("\n"), not part.quoted
        name, op, default = part.value
        value = self.param(name)
        if op == "#":
            return str(len(value or "")), not part.quoted
        if op is None:
            if value is None and self.nounset and name not in "@*":
                raise _Exit(2, f"{name}: parameter not set")
            return value or "", not part.quoted
        is_set = value is not None and (value != "" or not op.startswith(":"))
        if op.endswith("-"):
            if is_set:
                return value or "", not part.quoted
            return (yield from self.expand_one(default, fds)), not part.quoted
        return ((yield from self.expand_one(default, fds)) if is_set else ""), not part.quoted

    def param(self, name: str) -> str | None:
        if name == "?":
            return str(self.status)
        if name == "#":
            return str(len(self.args) - 1)
        if name in ("@", "*"):
            return " ".join(self.args[1:])
        if name == "$":
            return "4242"
        if name.isdigit():
            k = int(name)
            return self.args[k] if k < len(self.args) else None
        return self.vars.get(name)

    def glob(self, pattern: str) -> list[str]:
        found = ["/" if pattern.startswith("/") else ""]
        for part in [p for p in pattern.split("/") if p]:
            step = []
            for prefix in found:
                join = prefix if prefix in ("", "/") else prefix + "/"
                if not _has_glob(part):
                    candidate = join + _unglob(part)
                    if self.fs.lookup(self.path(candidate), follow=False) is not None:
                        step.append(candidate)
                    continue
                folder = self.fs.lookup(self.path(prefix or "."))
                if not isinstance(folder, _Dir):
                    continue
                for name in sorted(folder.entries):
                    if name.startswith(".") and not part.startswith("."):
                        continue
                    if fnmatch.fnmatchcase(name, part):
                        step.append(join + name)
            found = step
        return sorted(found)


@dataclass(eq=False)
class _Job:
    """A background command, paused in a sleep until `wake` (virtual time)."""

    gen: Gen
    uid: int
    serial: int
    wake: float = 0.0
    done: bool = False


# ---------------------------------------------------------------------------------------------------
# builtins


def _options(argv: list[str], allowed: str) -> tuple[set[str], list[str]]:
    """Leading single-letter flags (combined or not, up to `--` or the first operand).

    Raises:
        _Unsupported: a flag outside `allowed`.
    """
    flags: set[str] = set()
    args = argv[1:]
    while args and args[0].startswith("-") and args[0] != "-":
        arg = args.pop(0)
        if arg == "--":
            break
        for ch in arg[1:]:
            if ch not in allowed:
                raise _Unsupported(f"{argv[0]}: option -{ch} is not supported", 2)
            flags.add(ch)
    return flags, args


def _b_true(sh: _Shell, argv: list[str], fds: _Fds) -> int:
    return 0


def _b_umask(sh: _Shell, argv: list[str], fds: _Fds) -> int:
    if len(argv) > 1:
        raise _Unsupported("umask: changing the mask is not supported", 2)
    fds.w(1).write(_enc(f"{UMASK:04o}\n"))
    return 0


_DEFAULT_IFS = " \t\n"


def _ifs_delimiter(ifs: str) -> re.Pattern[str] | None:
    """One field delimiter under `ifs`, as sh reads it: a run of IFS whitespace, or one other IFS character
    with the IFS whitespace around it; None where IFS is empty (no splitting)."""
    if not ifs:
        return None
    space = "".join(re.escape(c) for c in ifs if c in " \t\n")
    other = "".join(re.escape(c) for c in ifs if c not in " \t\n")
    ws = f"[{space}]" if space else None
    alternatives = ([f"{ws}*[{other}]{ws}*" if ws else f"[{other}]"] if other else []) + ([f"{ws}+"] if ws else [])
    return re.compile("|".join(alternatives))


def _ifs_split(text: str, ifs: str) -> tuple[list[str], bool]:
    """The pieces of an unquoted expansion between IFS delimiters, and whether a delimiter at its very start
    holds a non-whitespace IFS character (then an empty first field stands)."""
    delimiter = _ifs_delimiter(ifs)
    if delimiter is None:
        return [text], False
    first = delimiter.match(text)
    leading_field = first is not None and first.group().strip(" \t\n") != ""
    return delimiter.split(text), leading_field


def _ifs_read(line: str, ifs: str, names: int) -> list[str]:
    """`read`'s fields of `line` for `names` names: IFS whitespace trimmed at both ends, split on IFS
    delimiters, the last name taking the rest."""
    delimiter = _ifs_delimiter(ifs)
    space = "".join(c for c in ifs if c in " \t\n")
    line = line.strip(space) if space else line
    if delimiter is None or names <= 1:
        return [line]
    return delimiter.split(line, maxsplit=names - 1)


def _b_read(sh: _Shell, argv: list[str], fds: _Fds) -> int:
    """`read [-r] NAME...`: one line of stdin split on IFS, the last name taking the rest (always raw, as -r)."""
    _, names = _options(argv, "r")
    data = fds.stdin.data
    if fds.stdin.pos >= len(data):
        for name in names:
            sh.vars[name] = ""
        return 1
    end = data.find(b"\n", fds.stdin.pos)
    line = _dec(data[fds.stdin.pos : len(data) if end == -1 else end])
    fds.stdin.pos = len(data) if end == -1 else end + 1
    fields = _ifs_read(line, sh.vars.get("IFS", _DEFAULT_IFS), len(names)) if names else []
    for k, name in enumerate(names or ["REPLY"]):
        sh.vars[name] = fields[k] if k < len(fields) else ("" if names else line)
    return 0 if end != -1 else 1


def _b_false(sh: _Shell, argv: list[str], fds: _Fds) -> int:
    return 1


def _echo_escapes(text: str) -> tuple[str, bool]:
    """(text, stop) with echo's backslash escapes expanded; `\\c` stops the output."""
    out: list[str] = []
    i = 0
    simple = {"n": "\n", "t": "\t", "\\": "\\", "a": "\a", "b": "\b", "f": "\f", "r": "\r", "v": "\v", "e": "\x1b"}
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt == "c":
                return "".join(out), True
            if nxt in simple:
                out.append(simple[nxt])
                i += 2
                continue
            if nxt == "0":
                digits = re.match(r"[0-7]{0,3}", text[i + 2 :])
                assert digits is not None
                out.append(chr(int(digits.group(0) or "0", 8)))
                i += 2 + len(digits.group(0))
                continue
        out.append(c)
        i += 1
    return "".join(out), False


def _b_echo(sh: _Shell, argv: list[str], fds: _Fds) -> int:
    args = argv[1:]
    newline, escapes = True, not sh.bash
    if sh.bash:
        while args and re.fullmatch(r"-[neE]+", args[0]):
            for ch in args.pop(0)[1:]:
                newline = newline and ch != "n"
                escapes = ch == "e" if ch in "eE" else escapes
    elif args and args[0] == "-n":
        args.pop(0)
        newline = False
    text = " ".join(args)
    if escapes:
        text, stop = _echo_escapes(text)
        newline = newline and not stop
    fds.w(1).write(_enc(text + ("\n" if newline else "")))
    return 0


_PRINTF_SPEC = re.compile(r"%([-+ #0]*)(\d*)(?:\.(\d*))?([a-zA-Z%])")


def _printf_escapes(text: str) -> str:
    out, i = [], 0
    simple = {"n": "\n", "t": "\t", "\\": "\\", '"': '"', "'": "'", "a": "\a", "b": "\b", "f": "\f", "r": "\r"}
    while i < len(text):
        if text[i] == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt in simple:
                out.append(simple[nxt])
                i += 2
                continue
            digits = re.match(r"[0-7]{1,3}", text[i + 1 :])
            if digits:
                out.append(chr(int(digits.group(0), 8)))
                i += 1 + len(digits.group(0))
                continue
        out.append(text[i])
        i += 1
    return "".join(out)


def _printf_int(text: str) -> tuple[int, bool]:
    """(value, whole text converted) of a printf integer argument (`0x1f`, `017`, `'c`, `12abc` -> 12)."""
    text = text.strip()
    if text[:1] in ("'", '"'):
        return (ord(text[1]) if len(text) > 1 else 0), True
    for pattern, base in ((r"[-+]?0[xX][0-9a-fA-F]+", 16), (r"[-+]?0[0-7]+", 8), (r"[-+]?\d+", 10)):
        match = re.match(pattern, text)
        if match:
            return int(match.group(0), base), match.end() == len(text)
    return 0, False


def _b_printf(sh: _Shell, argv: list[str], fds: _Fds) -> int:
    if len(argv) < 2:
        sh.say(fds, "printf: usage: printf format [arguments]")
        return 2
    fmt, args = argv[1], argv[2:]
    if fmt.startswith("-") and fmt != "-":
        raise _Unsupported(f"printf: option {fmt} is not supported", 2)
    out: list[str] = []
    status = 0
    while True:
        used = 0
        pos = 0
        for match in _PRINTF_SPEC.finditer(fmt):
            out.append(_printf_escapes(fmt[pos : match.start()]))
            pos = match.end()
            flags, width, precision, conv = match.groups()
            if conv == "%":
                out.append("%")
                continue
            arg = args[used] if used < len(args) else None
            used += 1
            spec = "%" + flags + width + (f".{precision}" if precision is not None else "")
            if conv in "diuxXo":
                number, whole = _printf_int(arg or "0")
                if not whole:
                    why = "not completely converted" if re.match(r"\s*[-+]?\d", arg or "") else "expected numeric value"
                    sh.shell_error(fds, f"printf: {arg}: {why}")
                    status = 1
                out.append((spec + ("d" if conv in "iu" else conv)) % number)
            elif conv in "feEgG":
                try:
                    real = float(arg or 0)
                except ValueError:
                    sh.say(fds, f"printf: {arg}: expected numeric value")
                    real, status = 0.0, 1
                out.append((spec + conv) % real)
            elif conv == "s":
                out.append((spec + "s") % (arg or ""))
            elif conv == "b":
                out.append((spec + "s") % _echo_escapes(arg or "")[0])
            elif conv == "c":
                out.append((spec + "s") % (arg or "")[:1])
            else:
                raise _Unsupported(f"printf: conversion %{conv} is not supported", 2)
        out.append(_printf_escapes(fmt[pos:]))
        args = args[used:]
        if not args or used == 0:
            break
    fds.w(1).write(_enc("".join(out)))
    return status


def _b_cat(sh: _Shell, argv: list[str], fds: _Fds) -> int:
    _, args = _options(argv, "")
    status = 0
    for name in args or ["-"]:
        if name == "-":
            fds.w(1).write(fds.stdin.read())
            continue
        try:
            fds.w(1).write(sh.read_file(name, fds))
        except OSError as e:
            sh.say(fds, f"cat: {name}: {e.strerror}")
            status = 1
    return status


def _b_mkdir(sh: _Shell, argv: list[str], fds: _Fds) -> int:
    args, parents, mode = argv[1:], False, None
    while args and args[0].startswith("-") and args[0] != "-":
        arg = args.pop(0)
        if arg == "--":
            break
        k = 1
        while k < len(arg):
            if arg[k] == "p":
                parents = True
            elif arg[k] == "m":
                value = arg[k + 1 :] or (args.pop(0) if args else "")
                mode = _chmod_mode(value, 0o777, True, argv[0])
                break
            else:
                raise _Unsupported(f"mkdir: option -{arg[k]} is not supported", 2)
            k += 1
    status = 0
    for name in args:
        path = sh.path(name)
        try:
            if parents:
                created = sh.fs.lookup(path) is None
                folder = sh.fs.makedirs(path, uid=sh.uid)
            else:
                created, folder = True, sh.fs.mkdir(path, uid=sh.uid)
            if mode is not None and created:
                folder.mode = mode
        except OSError as e:
            sh.say(fds, f"mkdir: cannot create directory \u2018{name}\u2019: {e.strerror}")
            status = 1
    return status


def _b_ln(sh: _Shell, argv: list[str], fds: _Fds) -> int:
    flags, args = _options(argv, "sfnT")
    if "s" not in flags:
        raise _Unsupported("ln: hard links are not supported (use ln -s)", 2)
    if len(args) not in (1, 2):
        raise _Unsupported("ln: only `ln -s TARGET [LINK]` is supported", 2)
    target = args[0]
    link = args[1] if len(args) == 2 else posixpath.basename(target.rstrip("/"))
    path = sh.path(link)
    if not flags & {"n", "T"} and isinstance(sh.fs.lookup(path), _Dir):
        path = f"{path.rstrip('/')}/{posixpath.basename(target.rstrip('/'))}"
    try:
        found = sh.fs.find(path, follow=False)
    except OSError as e:
        sh.say(fds, f"ln: failed to create symbolic link '{link}': {e.strerror}")
        return 1
    if found.node is not None:
        if "f" not in flags:
            sh.say(fds, f"ln: failed to create symbolic link '{link}': File exists")
            return 1
        if isinstance(found.node, _Dir):
            sh.say(fds, f"ln: {link}: cannot overwrite directory")
            return 1
    found.parent.entries[found.name] = _Link(target, sh.uid)
    return 0


def _b_rm(sh: _Shell, argv: list[str], fds: _Fds) -> int:
    flags, args = _options(argv, "rRfd")
    recursive, force = bool(flags & {"r", "R"}), "f" in flags
    if not args and not force:
        sh.say(fds, "rm: missing operand")
        return 1
    status = 0
    for name in args:
        path = sh.path(name).rstrip("/") or "/"
        if posixpath.basename(path) in (".", "..") or path == "/":
            sh.say(fds, f"rm: refusing to remove '.' or '..' or '/': skipping '{name}'")
            status = 1
            continue
        try:
            found = sh.fs.find(path, follow=False)
        except OSError as e:
            if not force or not isinstance(e, FileNotFoundError):
                sh.say(fds, f"rm: cannot remove '{name}': {e.strerror}")
                status = 1
            continue
        if found.node is None:
            if not force:
                sh.say(fds, f"rm: cannot remove '{name}': No such file or directory")
                status = 1
            continue
        if isinstance(found.node, _Dir) and not recursive:
            sh.say(fds, f"rm: cannot remove '{name}': Is a directory")
            status = 1
            continue
        del found.parent.entries[found.name]
    return status


def _b_touch(sh: _Shell, argv: list[str], fds: _Fds) -> int:
    _, args = _options(argv, "")
    status = 0
    for name in args:
        try:
            if sh.fs.lookup(sh.path(name)) is None:
                sh.fs.open_file(sh.path(name), uid=sh.uid, append=True)
        except OSError as e:
            sh.say(fds, f"touch: cannot touch '{name}': {e.strerror}")
            status = 1
    return status


def _chmod_mode(spec: str, mode: int, is_dir: bool, who_cmd: str = "chmod") -> int:
    """The new mode for `spec` (octal, or symbolic clauses such as `a+rwX,go-w`) over `mode`."""
    if re.fullmatch(r"[0-7]{1,4}", spec):
        return int(spec, 8)
    for clause in spec.split(","):
        match = re.fullmatch(r"([ugoa]*)((?:[-+=][rwxXst]*)+)", clause)
        if not match:
            raise _Unsupported(f"{who_cmd}: mode {spec!r} is not supported", 2)
        who = match.group(1) or ""
        mask = 0
        for w in who or "a":
            mask |= {"u": 0o4700, "g": 0o2070, "o": 0o1007, "a": 0o7777}[w]
        for op, perms in re.findall(r"([-+=])([rwxXst]*)", match.group(2)):
            bits = 0
            for p in perms:
                if p == "X":
                    bits |= 0o111 if is_dir or mode & 0o111 else 0
                else:
                    bits |= {"r": 0o444, "w": 0o222, "x": 0o111, "s": 0o6000, "t": 0o1000}[p]
            bits &= mask
            if not who and op != "-":
                bits &= ~UMASK
            if op == "+":
                mode |= bits
            elif op == "-":
                mode &= ~bits
            else:
                mode = (mode & ~(mask & 0o777)) | bits
    return mode


def _b_chmod(sh: _Shell, argv: list[str], fds: _Fds) -> int:
    flags, args = _options(argv, "R")
    if len(args) < 2:
        sh.say(fds, "chmod: missing operand")
        return 1
    spec, names = args[0], args[1:]

    def apply(node: _Node, top: bool) -> None:
        if isinstance(node, _Link):
            return
        node.mode = _chmod_mode(spec, node.mode, isinstance(node, _Dir))
        if "R" in flags and isinstance(node, _Dir):
            for child in node.entries.values():
                apply(child, False)

    status = 0
    for name in names:
        node = sh.fs.lookup(sh.path(name))
        if node is None:
            sh.say(fds, f"chmod: cannot access '{name}': No such file or directory")
            status = 1
            continue
        apply(node, True)
    return status


def _b_ls(sh: _Shell, argv: list[str], fds: _Fds) -> int:
    flags, args = _options(argv, "Aa1")
    operands = args or ["."]
    files, folders, status = [], [], 0
    for name in sorted(operands):
        node = sh.fs.lookup(sh.path(name))
        if node is None:
            sh.say(fds, f"ls: cannot access '{name}': No such file or directory")
            status = 2
        elif isinstance(node, _Dir):
            folders.append((name, node))
        else:
            files.append(name)
    blocks = ["".join(f"{f}\n" for f in files)] if files else []
    for name, node in folders:
        names = sorted(n for n in node.entries if "a" in flags or "A" in flags or not n.startswith("."))
        if "a" in flags:
            names = [".", "..", *names]
        header = f"{name}:\n" if len(operands) > 1 else ""
        blocks.append(header + "".join(f"{n}\n" for n in names))
    fds.w(1).write(_enc("\n".join(blocks)))
    return status


def _b_wc(sh: _Shell, argv: list[str], fds: _Fds) -> int:
    flags, args = _options(argv, "lcw")
    if len(flags) != 1:
        raise _Unsupported("wc: exactly one of -l, -c, -w is supported", 2)
    (flag,) = flags

    def count(data: bytes) -> int:
        return {"l": data.count(b"\n"), "c": len(data), "w": len(data.split())}[flag]

    if not args:
        fds.w(1).write(_enc(f"{count(fds.stdin.read())}\n"))
        return 0
    rows, status = [], 0
    for name in args:
        try:
            rows.append((count(sh.read_file(name, fds)), name))
        except OSError as e:
            sh.say(fds, f"wc: {name}: {e.strerror}")
            status = 1
    if len(args) > 1:
        rows.append((sum(n for n, _ in rows), "total"))
    width = max((len(str(n)) for n, _ in rows), default=1) if len(args) > 1 else 0
    fds.w(1).write(_enc("".join(f"{n:>{width}} {name}\n" for n, name in rows)))
    return status


def _head_tail(sh: _Shell, argv: list[str], fds: _Fds) -> int:
    argv = [posixpath.basename(argv[0]), *argv[1:]]
    args, lines, nbytes, from_start = argv[1:], 10, None, False
    while args and args[0].startswith("-") and args[0] != "-":
        arg = args.pop(0)
        if arg == "--":
            break
        if re.fullmatch(r"-\d+", arg):
            lines = int(arg[1:])
        elif arg in ("-n", "-c") or re.fullmatch(r"-[nc][+]?\d+", arg):
            value = arg[2:] or (args.pop(0) if args else "")
            if not re.fullmatch(r"[+]?\d+", value):
                raise _Unsupported(f"{argv[0]}: count {value!r} is not supported", 2)
            from_start = value.startswith("+")
            if arg[1] == "c":
                if argv[0] != "head" or from_start:
                    raise _Unsupported(f"{argv[0]}: -c is supported by head only", 2)
                nbytes = int(value)
            else:
                lines = int(value.lstrip("+"))
                if from_start and argv[0] != "tail":
                    raise _Unsupported("head: -n +N is not supported", 2)
        else:
            raise _Unsupported(f"{argv[0]}: option {arg} is not supported", 2)
    if len(args) > 1:
        raise _Unsupported(f"{argv[0]}: several files are not supported", 2)
    try:
        data = sh.read_file(args[0], fds) if args and args[0] != "-" else fds.stdin.read()
    except OSError as e:
        sh.say(fds, f"{argv[0]}: cannot open '{args[0]}' for reading: {e.strerror}")
        return 1
    if nbytes is not None:
        fds.w(1).write(data[:nbytes])
        return 0
    parts = data.splitlines(keepends=True)
    if argv[0] == "head":
        chosen = parts[:lines]
    elif from_start:
        chosen = parts[max(lines - 1, 0) :]
    else:
        chosen = parts[-lines:] if lines else []
    fds.w(1).write(b"".join(chosen))
    return 0


def _b_basename(sh: _Shell, argv: list[str], fds: _Fds) -> int:
    _, args = _options(argv, "")
    if not args:
        sh.say(fds, "basename: missing operand")
        return 1
    name = args[0].rstrip("/")
    base = posixpath.basename(name) or ("/" if args[0].startswith("/") else "")
    if len(args) > 1 and base.endswith(args[1]) and base != args[1]:
        base = base[: -len(args[1])]
    fds.w(1).write(_enc(base + "\n"))
    return 0


def _b_dirname(sh: _Shell, argv: list[str], fds: _Fds) -> int:
    _, args = _options(argv, "")
    if not args:
        sh.say(fds, "dirname: missing operand")
        return 1
    name = args[0].rstrip("/") or "/"
    parent = posixpath.dirname(name).rstrip("/") or ("/" if name.startswith("/") else ".")
    fds.w(1).write(_enc(parent + "\n"))
    return 0


def _b_pwd(sh: _Shell, argv: list[str], fds: _Fds) -> int:
    _options(argv, "LP")
    fds.w(1).write(_enc(sh.cwd + "\n"))
    return 0


def _b_cd(sh: _Shell, argv: list[str], fds: _Fds) -> int:
    _, args = _options(argv, "")
    target = args[0] if args else sh.vars.get("HOME", "/")
    if target == "-":
        raise _Unsupported("cd -: not supported", 2)
    path = posixpath.normpath(sh.path(target))
    if not isinstance(sh.fs.lookup(path), _Dir):
        if sh.bash:
            sh.shell_error(fds, f"cd: {target}: No such file or directory")
            return 1
        sh.shell_error(fds, f"cd: can't cd to {target}")
        return 2
    sh.cwd = "/" + path.lstrip("/") if path.startswith("//") else path
    sh.vars["PWD"] = sh.cwd
    return 0


def _user_id(name: str) -> int | None:
    if name.isdigit():
        return int(name)
    return USERS.get(name)


def _b_id(sh: _Shell, argv: list[str], fds: _Fds) -> int:
    flags, args = _options(argv, "ugn")
    uid = sh.uid
    if args:
        found = _user_id(args[0])
        if found is None:
            sh.say(fds, f"id: '{args[0]}': no such user")
            return 1
        uid = found
    name = NAMES.get(uid, str(uid))
    group = "root" if uid == 0 else ("nogroup" if uid == 65534 else str(uid))
    if not flags & {"u", "g"}:
        if "n" in flags:
            raise _Unsupported("id: -n needs -u or -g", 2)
        fds.w(1).write(_enc(f"uid={uid}({name}) gid={uid}({group}) groups={uid}({group})\n"))
        return 0
    text = (name if "u" in flags else group) if "n" in flags else str(uid)
    fds.w(1).write(_enc(text + "\n"))
    return 0


def _b_exit(sh: _Shell, argv: list[str], fds: _Fds) -> int:
    code = argv[1] if len(argv) > 1 else str(sh.status)
    if not code.isdigit():
        raise _Exit(2, f"exit: Illegal number: {code}")
    raise _Exit(int(code))


def _b_export(sh: _Shell, argv: list[str], fds: _Fds) -> int:
    _, args = _options(argv, "")
    for arg in args:
        name, eq, value = arg.partition("=")
        if not _NAME.fullmatch(name):
            raise _Exit(2, f"export: {arg}: bad variable name")
        if eq:
            sh.vars[name] = value
        sh.exported.add(name)
    return 0


def _b_unset(sh: _Shell, argv: list[str], fds: _Fds) -> int:
    _, args = _options(argv, "v")
    for name in args:
        sh.vars.pop(name, None)
        sh.exported.discard(name)
    return 0


def _set_options(sh: _Shell, argv: list[str]) -> list[str] | None:
    """Apply `set`-style flags; return the positional arguments that follow, if any are given."""
    args = argv[1:]
    while args and args[0][:1] in ("-", "+") and args[0] not in ("-", "+"):
        arg = args.pop(0)
        if arg == "--":
            return args
        on = arg[0] == "-"
        for ch in arg[1:]:
            name = {"e": "errexit", "u": "nounset"}.get(ch)
            if ch == "o":
                name = args.pop(0) if args else ""
            if name == "errexit":
                sh.errexit = on
            elif name == "nounset":
                sh.nounset = on
            elif name == "pipefail" and sh.bash:
                sh.pipefail = on
            else:
                raise _Unsupported(f"set {arg[0]}{ch}{' ' + (name or '') if ch == 'o' else ''}: not supported", 2)
    return args or None


def _b_set(sh: _Shell, argv: list[str], fds: _Fds) -> int:
    if len(argv) == 1:
        raise _Unsupported("set without arguments (listing variables) is not supported", 2)
    positional = _set_options(sh, argv)
    if positional is not None or "--" in argv:
        sh.args = [sh.args[0], *(positional or [])]
    return 0


def _b_shift(sh: _Shell, argv: list[str], fds: _Fds) -> int:
    n = int(argv[1]) if len(argv) > 1 and argv[1].isdigit() else 1
    if n > len(sh.args) - 1:
        raise _Exit(2, "shift: can't shift that many")
    sh.args = [sh.args[0], *sh.args[1 + n :]]
    return 0


def _test(sh: _Shell, args: list[str], fds: _Fds) -> int:
    """test's exit status: 0 true, 1 false, 2 error."""
    if args and args[0] == "!" and len(args) > 1:
        result = _test(sh, args[1:], fds)
        return result if result == 2 else 1 - result
    if len(args) == 0:
        return 1
    if len(args) == 1:
        return 0 if args[0] else 1
    if len(args) == 2:
        op, operand = args
        if op in ("-n", "-z"):
            return 0 if bool(operand) == (op == "-n") else 1
        if op not in ("-e", "-f", "-d", "-L", "-h", "-s", "-r", "-w", "-x"):
            raise _Unsupported(f"test: unary operator {op} is not supported", 2)
        path = sh.path(operand)
        node = sh.fs.lookup(path, follow=op not in ("-L", "-h"))
        if op in ("-L", "-h"):
            ok = isinstance(node, _Link)
        elif op == "-e":
            ok = node is not None
        elif op == "-f":
            ok = isinstance(node, _File)
        elif op == "-d":
            ok = isinstance(node, _Dir)
        elif op == "-s":
            ok = (isinstance(node, _File) and len(node.data) > 0) or isinstance(node, _Dir)
        else:
            bit = {"-r": 4, "-w": 2, "-x": 1}[op]
            if node is None:
                ok = False
            elif sh.uid == 0:
                ok = op != "-x" or isinstance(node, _Dir) or bool(node.mode & 0o111)
            else:
                shift = 6 if node.uid == sh.uid else 0
                ok = bool((node.mode >> shift) & bit)
        return 0 if ok else 1
    if len(args) == 3:
        left, op, right = args
        if op in ("=", "=="):
            return 0 if left == right else 1
        if op == "!=":
            return 0 if left != right else 1
        if op in ("-eq", "-ne", "-lt", "-le", "-gt", "-ge"):
            try:
                a, b = int(left), int(right)
            except ValueError:
                sh.say(fds, f"test: integer expression expected: {left if not _is_int(left) else right}")
                return 2
            ok = {"-eq": a == b, "-ne": a != b, "-lt": a < b, "-le": a <= b, "-gt": a > b, "-ge": a >= b}[op]
            return 0 if ok else 1
        raise _Unsupported(f"test: binary operator {op} is not supported", 2)
    raise _Unsupported(f"test: {len(args)} arguments (-a, -o, parentheses) are not supported", 2)


def _is_int(text: str) -> bool:
    return bool(re.fullmatch(r"\s*[-+]?\d+\s*", text))


def _b_test(sh: _Shell, argv: list[str], fds: _Fds) -> int:
    args = argv[1:]
    if posixpath.basename(argv[0]) == "[":
        if not args or args[-1] != "]":
            sh.say(fds, "[: missing ]")
            return 2
        args = args[:-1]
    return _test(sh, args, fds)


def _walk(node: _Node, shown: str, depth: int) -> list[tuple[str, _Node, int, _Dir | None, str]]:
    """(shown path, node, depth, parent folder, name) of `node` and everything under it, pre-order, sorted."""
    out: list[tuple[str, _Node, int, _Dir | None, str]] = []
    if isinstance(node, _Dir):
        for name in sorted(node.entries):
            child = node.entries[name]
            path = f"{shown}{name}" if shown.endswith("/") else f"{shown}/{name}"
            out.append((path, child, depth + 1, node, name))
            out += _walk(child, path, depth + 1) if isinstance(child, _Dir) else []
    return out


def _b_find(sh: _Shell, argv: list[str], fds: _Fds) -> int:
    args = argv[1:]
    starts = []
    while args and not args[0].startswith("-") and args[0] not in ("!", "("):
        starts.append(args.pop(0))
    mindepth, maxdepth, kind, pattern, delete = 0, math.inf, None, None, False
    while args:
        arg = args.pop(0)
        if arg in ("-mindepth", "-maxdepth", "-type", "-name") and not args:
            sh.say(fds, f"find: missing argument to '{arg}'")
            return 1
        if arg in ("-mindepth", "-maxdepth") and not args[0].isdigit():
            raise _Unsupported(f"find: {arg} {args[0]}", 2)
        if arg == "-mindepth":
            mindepth = int(args.pop(0))
        elif arg == "-maxdepth":
            maxdepth = int(args.pop(0))
        elif arg == "-type" and args[0] in ("f", "d", "l"):
            kind = {"f": _File, "d": _Dir, "l": _Link}[args.pop(0)]
        elif arg == "-name":
            pattern = args.pop(0)
        elif arg == "-delete":
            delete = True
        elif arg != "-print":
            raise _Unsupported(f"find: {arg} is not supported", 2)
    status = 0
    for start in starts or ["."]:
        node = sh.fs.lookup(sh.path(start), follow=False)
        if node is None:
            sh.say(fds, f"find: '{start}': No such file or directory")
            status = 1
            continue
        rows: list[tuple[str, _Node, int, _Dir | None, str]] = [(start, node, 0, None, "")]
        rows += _walk(node, start, 0)
        if delete:
            rows.reverse()
        for shown, child, depth, parent, name in rows:
            if not mindepth <= depth <= maxdepth:
                continue
            if kind is not None and not isinstance(child, kind):
                continue
            if pattern is not None and not fnmatch.fnmatchcase(posixpath.basename(shown.rstrip("/")), pattern):
                continue
            if not delete:
                fds.w(1).write(_enc(shown + "\n"))
            elif parent is None:
                raise _Unsupported("find: -delete of a starting point (use -mindepth 1)", 2)
            elif isinstance(child, _Dir) and child.entries:
                sh.say(fds, f"find: cannot delete '{shown}': Directory not empty")
                status = 1
            else:
                del parent.entries[name]
    return status


def _b_cp(sh: _Shell, argv: list[str], fds: _Fds) -> int:
    flags, args = _options(argv, "rRapfP")
    recursive, keep = bool(flags & {"r", "R", "a"}), bool(flags & {"a", "p"})
    if len(args) < 2:
        sh.say(fds, "cp: missing destination file operand")
        return 1
    *sources, dest = args
    dest_path = sh.path(dest)
    into = isinstance(sh.fs.lookup(dest_path), _Dir)
    if len(sources) > 1 and not into:
        sh.say(fds, f"cp: target '{dest}' is not a directory")
        return 1
    status = 0
    for source in sources:
        node = sh.fs.lookup(sh.path(source), follow=not recursive)
        if recursive and isinstance(node, _Link):
            node = _Link(node.target, sh.uid)
        if node is None:
            sh.say(fds, f"cp: cannot stat '{source}': No such file or directory")
            status = 1
            continue
        if isinstance(node, _Dir) and not recursive:
            sh.say(fds, f"cp: -r not specified; omitting directory '{source}'")
            status = 1
            continue
        target = f"{dest_path.rstrip('/')}/{posixpath.basename(source.rstrip('/'))}" if into else dest_path
        try:
            _copy_node(sh, node, target, keep)
        except OSError as e:
            sh.say(fds, f"cp: cannot create '{target}': {e.strerror}")
            status = 1
    return status


def _copy_node(sh: _Shell, node: _Node, target: str, keep: bool) -> None:
    existing = sh.fs.lookup(target)
    if isinstance(node, _Dir):
        folder = existing if isinstance(existing, _Dir) else sh.fs.mkdir(target, mode=node.mode, uid=sh.uid)
        for name, child in sorted(node.entries.items()):
            _copy_node(sh, child, f"{target.rstrip('/')}/{name}", keep)
        if keep:
            folder.mode = node.mode
        return
    if isinstance(node, _Link):
        sh.fs.remove(target)
        found = sh.fs.find(target, follow=False)
        found.parent.entries[found.name] = _Link(node.target, sh.uid)
        return
    data = bytes(node.data) if isinstance(node, _File) else b""
    out = sh.fs.open_file(target, uid=sh.uid)
    if isinstance(out, _File):
        out.data[:] = data
        if keep or not isinstance(existing, _File):
            out.mode = node.mode if keep else node.mode & ~UMASK


def _b_mv(sh: _Shell, argv: list[str], fds: _Fds) -> int:
    _, args = _options(argv, "f")
    if len(args) != 2:
        raise _Unsupported("mv: only `mv SOURCE DEST` is supported", 2)
    source, dest = args
    try:
        found = sh.fs.find(sh.path(source).rstrip("/") or "/", follow=False)
    except OSError as e:
        sh.say(fds, f"mv: cannot stat '{source}': {e.strerror}")
        return 1
    if found.node is None:
        sh.say(fds, f"mv: cannot stat '{source}': No such file or directory")
        return 1
    dest_path = sh.path(dest)
    if isinstance(sh.fs.lookup(dest_path), _Dir):
        dest_path = f"{dest_path.rstrip('/')}/{found.name}"
    try:
        target = sh.fs.find(dest_path, follow=False)
    except OSError as e:
        sh.say(fds, f"mv: cannot move '{source}' to '{dest}': {e.strerror}")
        return 1
    if target.node is found.node:
        return 0
    if isinstance(target.node, _Dir) and (target.node.entries or not isinstance(found.node, _Dir)):
        sh.say(fds, f"mv: cannot move '{source}' to '{dest}': Directory not empty")
        return 1
    if isinstance(found.node, _Dir) and (target.path + "/").startswith(found.path.rstrip("/") + "/"):
        sh.say(fds, f"mv: cannot move '{source}' to a subdirectory of itself, '{dest}'")
        return 1
    node = found.parent.entries.pop(found.name)
    target.parent.entries[target.name] = node
    return 0


def _b_command(sh: _Shell, argv: list[str], fds: _Fds, extra: Mapping[str, str]) -> Gen:
    flags, args = _options(argv, "v")
    if "v" not in flags:
        return (yield from _in_subshell(sh, args, fds, extra)) if args else 0
    status = 0
    for name in args:
        if "/" in name:
            found = name if isinstance(sh.fs.lookup(sh.path(name)), _File) else None
        elif name in _SHELL_BUILTINS:
            found = name
        else:
            found = sh.which(name) or (f"/usr/bin/{name}" if name in _BUILTINS or name in sh.box.programs else None)
        if found is None:
            status = 1 if sh.bash else 127
        else:
            fds.w(1).write(_enc(found + "\n"))
    return status


def _b_dot(sh: _Shell, argv: list[str], fds: _Fds, extra: Mapping[str, str]) -> Gen:
    if len(argv) < 2:
        raise _Exit(2, f"{argv[0]}: filename argument required")
    try:
        text = _dec(sh.read_file(argv[1], fds))
    except OSError as e:
        raise _Exit(2 if not sh.bash else 1, f"{argv[0]}: cannot open {argv[1]}: {e.strerror}") from e
    return (yield from sh.run_seq(parse_script(text, sh.bash), fds))


def _parse_seconds(text: str) -> float | None:
    if text == "infinity":
        return math.inf
    match = re.fullmatch(r"(\d+(?:\.\d*)?|\.\d+)([smhd]?)", text)
    if not match:
        return None
    return float(match.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[match.group(2)]


def _b_sleep(sh: _Shell, argv: list[str], fds: _Fds, extra: Mapping[str, str]) -> Gen:
    if len(argv) < 2:
        sh.say(fds, "sleep: missing operand")
        return 1
    total = 0.0
    for arg in argv[1:]:
        seconds = _parse_seconds(arg)
        if seconds is None:
            sh.say(fds, f"sleep: invalid time interval '{arg}'")
            return 1
        total += seconds
    sh.box.sleeps += 1
    yield total
    return 0


def _b_wait(sh: _Shell, argv: list[str], fds: _Fds, extra: Mapping[str, str]) -> Gen:
    if len(argv) > 1:
        raise _Unsupported("wait: only `wait` for every background job is supported", 2)
    while True:
        waiting = [job for job in sh.jobs if not job.done]
        if not waiting:
            return 0
        sh.box.sleeps += 1
        yield max(0.0, min(job.wake for job in waiting) - sh.box.clock)


def _b_timeout(sh: _Shell, argv: list[str], fds: _Fds, extra: Mapping[str, str]) -> Gen:
    args = argv[1:]
    if args and args[0].startswith("-"):
        raise _Unsupported(f"timeout: option {args[0]} is not supported", 2)
    limit = _parse_seconds(args[0]) if args else None
    if limit is None or len(args) < 2:
        sh.say(fds, "timeout: invalid time interval or missing command")
        return 125
    child = sh.subshell()
    gen = child.run_argv(args[1:], fds, extra)
    elapsed = 0.0
    try:
        wait = next(gen)
        while True:
            if limit and elapsed + wait >= limit:
                if limit > elapsed:
                    yield limit - elapsed
                gen.close()
                return 124
            yield wait
            elapsed += wait
            wait = gen.send(None)
    except StopIteration as stop:
        return int(stop.value)
    except _Exit as e:
        return e.code


def _b_detach(sh: _Shell, argv: list[str], fds: _Fds, extra: Mapping[str, str]) -> Gen:
    """setsid and nohup: the command, run in a process of its own (a new session changes nothing here)."""
    args = argv[1:]
    if args and args[0].startswith("-"):
        raise _Unsupported(f"{argv[0]}: option {args[0]} is not supported", 2)
    if not args:
        sh.say(fds, f"{argv[0]}: missing operand")
        return 1
    return (yield from _in_subshell(sh, args, fds, extra))


def _b_env(sh: _Shell, argv: list[str], fds: _Fds, extra: Mapping[str, str]) -> Gen:
    args, more = argv[1:], dict(extra)
    if args and args[0].startswith("-"):
        raise _Unsupported(f"env: option {args[0]} is not supported", 2)
    while args and "=" in args[0] and not args[0].startswith("="):
        name, _, value = args.pop(0).partition("=")
        more[name] = value
    if not args:
        fds.w(1).write(_enc("".join(f"{k}={v}\n" for k, v in sh.environ(more).items())))
        return 0
    return (yield from _in_subshell(sh, args, fds, more))


def _in_subshell(sh: _Shell, args: list[str], fds: _Fds, extra: Mapping[str, str]) -> Gen:
    """Run `args` in a subshell of `sh`; an `exit` there is the command's status, not the shell's."""
    try:
        return (yield from sh.subshell().run_argv(args, fds, extra))
    except _Exit as e:
        return e.code


REWARD_GUARD = f"{GUARD_DIR}/reward_guard"


def _fake_reward_guard(sh: _Shell, argv: list[str], fds: _Fds, extra: Mapping[str, str]) -> Gen:
    """`qaflow.trial.guard`'s tracer as the fake runs it (`reward_guard DIR VDIR -- COMMAND...`): it takes the key,
    runs the command and writes the report. Nothing a fake command starts outlives it unseen, so no write is
    ever another process's."""
    if len(argv) < 5 or argv[3] != "--":
        fds.w(2).write(_enc("reward_guard: usage: reward_guard GUARD_DIR VDIR -- COMMAND...\n"))
        return 125
    folder = argv[1].rstrip("/")
    try:
        key = sh.box.fs.read(f"{folder}/key").decode().strip()
    except OSError:
        fds.w(2).write(_enc("reward_guard: cannot open the key\n"))
        return 125
    sh.box.fs.remove(f"{folder}/key")
    code = yield from _in_subshell(sh, argv[4:], fds, extra)
    sh.box.fs.remove(f"{folder}/report")
    sh.box.fs.write(f"{folder}/report", _enc(f"key {key}\nkilled 0\nend\n"))
    return code


def _b_exec(sh: _Shell, argv: list[str], fds: _Fds, extra: Mapping[str, str]) -> Gen:
    if len(argv) == 1:
        raise _Unsupported("exec without a command (redirecting the shell's own fds) is not supported", 2)
    code = yield from sh.run_argv(argv[1:], fds, extra)
    raise _Exit(code)


def _b_sh(sh: _Shell, argv: list[str], fds: _Fds, extra: Mapping[str, str]) -> Gen:
    """sh/bash/dash: `-c CMD [NAME ARGS...]`, `FILE ARGS...`, or a script on stdin."""
    bash = posixpath.basename(argv[0]) == "bash"
    args = argv[1:]
    command = False
    flags: list[str] = []
    while args and args[0][:1] in ("-", "+") and args[0] not in ("-", "+"):
        arg = args.pop(0)
        if arg == "--":
            break
        letters = arg[1:]
        if "c" in letters:
            command = True
            letters = letters.replace("c", "")
        letters = letters.replace("l", "")
        if letters:
            flags.append(arg[0] + letters)
            if "o" in letters:
                flags.append(args.pop(0) if args else "")
    if args and args[0] == "-":
        args.pop(0)
    name = argv[0]
    if command:
        if not args:
            sh.say(fds, f"{name}: -c: option requires an argument")
            return 2
        text, zero, positional = args[0], (args[1] if len(args) > 1 else name), args[2:]
    elif args:
        zero, positional = args[0], args[1:]
        try:
            text = _dec(sh.read_file(args[0], fds))
        except OSError as e:
            if bash:
                sh.say(fds, f"bash: {args[0]}: {e.strerror}")
                return 127
            sh.say(fds, f"{name}: 0: cannot open {args[0]}: No such file")
            return 2
    else:
        text, zero, positional = _dec(fds.stdin.read()), name, []
    child = sh.process(bash=bash, args=[zero, *positional], extra=extra)
    _set_options(child, ["set", *flags])
    return (yield from child.run_script(text, fds))


_BUILTINS: dict[str, Callable[[_Shell, list[str], _Fds], int]] = {
    ":": _b_true,
    "umask": _b_umask,
    "read": _b_read,
    "true": _b_true,
    "false": _b_false,
    "echo": _b_echo,
    "printf": _b_printf,
    "cat": _b_cat,
    "mkdir": _b_mkdir,
    "ln": _b_ln,
    "rm": _b_rm,
    "touch": _b_touch,
    "chmod": _b_chmod,
    "ls": _b_ls,
    "wc": _b_wc,
    "head": _head_tail,
    "tail": _head_tail,
    "cp": _b_cp,
    "mv": _b_mv,
    "basename": _b_basename,
    "dirname": _b_dirname,
    "find": _b_find,
    "pwd": _b_pwd,
    "cd": _b_cd,
    "id": _b_id,
    "exit": _b_exit,
    "export": _b_export,
    "unset": _b_unset,
    "set": _b_set,
    "shift": _b_shift,
    "test": _b_test,
    "[": _b_test,
}
_GEN_BUILTINS: dict[str, Callable[[_Shell, list[str], _Fds, Mapping[str, str]], Gen]] = {
    "sleep": _b_sleep,
    "wait": _b_wait,
    "timeout": _b_timeout,
    "setsid": _b_detach,
    "nohup": _b_detach,
    "env": _b_env,
    "exec": _b_exec,
    "command": _b_command,
    ".": _b_dot,
    "source": _b_dot,
    "sh": _b_sh,
    "bash": _b_sh,
    "dash": _b_sh,
}
_SHELL_BUILTINS = frozenset(
    {":", "true", "false", "echo", "printf", "pwd", "cd", "exit", "export", "unset", "set", "shift", "test", "["}
    | {"wait", "exec", "command", ".", "source", "read", "umask"}
)
"""Builtins of a real shell (`command -v` prints their name, not a path)."""


# ---------------------------------------------------------------------------------------------------
# the sandbox and its backend


def _uid_of(user: str | int | None) -> int:
    if user is None:
        return 0
    name = str(user).split(":", 1)[0]
    uid = _user_id(name)
    if uid is None:
        raise SandboxError(f"no user {name!r} in the fake sandbox (it knows root, nobody and numeric ids)")
    return uid


_OPEN: weakref.WeakSet[FakeSandbox] = weakref.WeakSet()
_SERIALS = itertools.count(1)


class FakeSandbox:
    """The `Sandbox` protocol over an in-memory file system and the fake shell (see the module doc)."""

    def __init__(
        self,
        spec: SandboxSpec,
        fs: FakeFS,
        *,
        image_env: Mapping[str, str] | None = None,
        workdir: str = "/app",
        programs: Mapping[str, Program] | None = None,
        clock: float = 0.0,
    ):
        self.spec = spec
        self.fs = fs
        self.workdir = workdir
        self.image_env = {**(image_env or {}), **spec.env}
        self.programs: dict[str, Program] = dict(programs or {})
        """Command name -> scripted program (see `Program`); tests may change it on an open sandbox."""
        self.clock = clock
        """Virtual seconds: foreground sleeps advance it, background jobs wake by it."""
        self.sleeps = 0
        self.unsupported: str | None = None
        """Why the last exec ended outside the fake's subset (None when it did not)."""
        self._jobs: list[_Job] = []
        self._serial = 0
        self._closed = False
        _OPEN.add(self)

    @property
    def writable_roots(self) -> list[str]:
        """The whole in-memory file system."""
        return ["/"]

    # -- exec ---------------------------------------------------------------------------------------

    def exec(
        self,
        cmd: str | Sequence[str],
        *,
        timeout: float | None = None,
        env: Mapping[str, str] | None = None,
        user: str | int | None = None,
        cwd: str | None = None,
        kill_strays_after: bool = False,
    ) -> ExecResult:
        """Run `cmd` (a string goes through the fake `sh -c`) in virtual time; see the module doc.

        Raises:
            SandboxError: the sandbox is closed, the command is empty, `cwd` is not a folder, the user is unknown.
        """
        self._check_open()
        argv = ["sh", "-c", cmd] if isinstance(cmd, str) else [str(c) for c in cmd]
        if not argv:
            raise SandboxError("empty command")
        uid = _uid_of(user)
        workdir = posixpath.join(self.workdir, cwd) if cwd else self.workdir
        if not isinstance(self.fs.lookup(workdir), _Dir):
            raise SandboxError(f"working directory {workdir} does not exist in sandbox {self.spec.name}")
        merged = {**BASE_ENV, "HOSTNAME": "fake", **self.image_env, **(env or {})}
        return self._run(argv, merged, uid, workdir, timeout, kill_strays_after)

    def _run(
        self, argv: list[str], env: dict[str, str], uid: int, cwd: str, timeout: float | None, kill_after: bool
    ) -> ExecResult:
        self._serial = serial = next(_SERIALS)
        self.unsupported = None
        limit = self.spec.limits.output_bytes
        out, err = _Capture(limit), _Capture(limit)
        shell = _Shell(self, env, cwd, uid, bash=False, args=["sh"])
        fds = _Fds(_In(), {1: out, 2: err})
        start = self.clock
        deadline = None if timeout is None else start + timeout
        timed_out = False
        try:
            code = self._drive(shell.run_argv(argv, fds, {}), deadline)
        except _Timeout:
            timed_out, code = True, TIMEOUT_EXIT
            self._kill(lambda job: job.serial == serial)
        except _Unsupported as e:
            self.unsupported = e.message
            err.write(_enc(f"fake sandbox: {e.message}\n"))
            code = e.code
            self._kill(lambda job: job.serial == serial)
        except _Exit as e:
            if e.message:
                err.write(_enc(f"sh: {e.message}\n"))
            code = e.code
        finally:
            out.open = err.open = False
        strays = self._kill(lambda job: uid == 0 or job.uid == uid) if kill_after else 0
        return ExecResult(
            exit_code=code,
            stdout=out.buffer.text(),
            stderr=err.buffer.text(),
            timed_out=timed_out,
            duration_s=self.clock - start,
            stdout_truncated=out.buffer.truncated,
            stderr_truncated=err.buffer.truncated,
            strays_killed=strays,
        )

    def _drive(self, gen: Gen, deadline: float | None) -> int:
        """Run a foreground command to its end in virtual time, resuming background jobs as it sleeps."""
        try:
            wait = next(gen)
            while True:
                if deadline is not None and self.clock + wait >= deadline:
                    self._advance(deadline)
                    raise _Timeout()
                if math.isinf(wait):
                    raise _Unsupported("a sleep that never ends, without a timeout, would hang the exec", 2)
                self._advance(self.clock + wait)
                wait = gen.send(None)
        except StopIteration as stop:
            return int(stop.value)
        finally:
            gen.close()

    def start_job(self, gen: Gen, uid: int) -> _Job | None:
        """Run a background command up to its first sleep; keep it in the process table if it sleeps."""
        job = _Job(gen, uid, self._serial)
        try:
            wait = next(gen)
        except StopIteration:
            job.done = True
            return job
        job.wake = self.clock + wait
        self._jobs.append(job)
        return job

    def _advance(self, until: float) -> None:
        """Move the clock to `until`, resuming every background job that wakes before it, in order."""
        for resumed in itertools.count():
            due = [job for job in self._jobs if job.wake <= until]
            if not due:
                break
            if resumed > MAX_SPINS:
                raise _Unsupported(f"background jobs woke {MAX_SPINS} times without time passing", 2)
            job = min(due, key=lambda j: j.wake)
            self.clock = max(self.clock, job.wake)
            try:
                job.wake = self.clock + job.gen.send(None)
            except StopIteration:
                job.done = True
                self._jobs.remove(job)
            except _Unsupported:
                job.done = True
                self._jobs.remove(job)
                raise
        self.clock = max(self.clock, until)

    def _kill(self, which: Callable[[_Job], bool]) -> int:
        doomed = [job for job in self._jobs if which(job)]
        for job in doomed:
            self._jobs.remove(job)
            job.done = True
            with contextlib.suppress(_Exit, _Unsupported):
                job.gen.close()
        return len(doomed)

    @property
    def processes(self) -> int:
        """How many background jobs are running (sleeping) now."""
        return len(self._jobs)

    def kill_strays(self, clear: Sequence[str] = ()) -> int:
        """Kill every background job; return how many. Then remove the paths `clear` (links never followed).

        Raises:
            SandboxError: the sandbox is closed, or a path in `clear` is `/`.
        """
        self._check_open()
        killed = self._kill(lambda job: True)
        for path in clear:
            try:
                self.fs.remove(self._abs(path))
            except OSError as e:
                raise SandboxError(f"cannot remove {path}: {e.strerror}") from e
        return killed

    def settle(self, clear: Sequence[str] = ()) -> int:
        """How many jobs still run (nothing changed), else `kill_strays(clear)` and 0."""
        self._check_open()
        if self._jobs:
            return len(self._jobs)
        self.kill_strays(clear)
        return 0

    def exec_when_settled(
        self,
        cmd: str | Sequence[str],
        *,
        clear: Sequence[str],
        uploads: Sequence[tuple[str, Path]],
        timeout: float | None = None,
        env: Mapping[str, str] | None = None,
        user: str | int | None = None,
    ) -> ExecResult | int:
        """See `Sandbox.exec_when_settled` (the plain sequence, `settled_exec`)."""
        return settled_exec(self, cmd, clear=clear, uploads=uploads, timeout=timeout, env=env, user=user)

    def verifier_view(self) -> FakeSandbox:
        """A new fake with a copy of the files (independent from now on), no processes, the same image."""
        self._check_open()
        view = FakeSandbox(
            self.spec, self.fs.clone(), image_env=self.image_env, workdir=self.workdir, programs=self.programs
        )
        view.clock = self.clock
        return view

    # -- files --------------------------------------------------------------------------------------

    def _abs(self, path: str) -> str:
        return path if path.startswith("/") else posixpath.join(self.workdir, path)

    def put(self, path: str, data: bytes | Path) -> None:
        """Write bytes to the file `path` (0644), or copy a host file or folder there (modes kept); parents are made.

        Raises:
            FileNotFoundError: the host source is missing.
            SandboxError: the sandbox is closed, or a folder or file is in the way.
        """
        self._check_open()
        target = self._abs(path)
        try:
            if isinstance(data, bytes | bytearray | memoryview):
                self.fs.makedirs(posixpath.dirname(target.rstrip("/")) or "/")
                self.fs.write(target, bytes(data))
                return
            source = Path(data)
            if not source.exists() and not source.is_symlink():
                raise FileNotFoundError(errno.ENOENT, "no such host file or folder", str(source))
            self.fs.copy_in(source, target)
        except FileNotFoundError:
            raise
        except OSError as e:
            raise SandboxError(f"cannot put {path} in {self.spec.name}: {e.strerror}") from e

    def get(self, path: str) -> bytes:
        """The file `path` (links followed). Raises FileNotFoundError, IsADirectoryError for a folder."""
        self._check_open()
        try:
            return self.fs.read(self._abs(path))
        except (FileNotFoundError, IsADirectoryError):
            raise
        except NotADirectoryError as e:
            raise FileNotFoundError(errno.ENOENT, "no such file in the sandbox", path) from e
        except OSError as e:
            raise SandboxError(f"cannot read {path}: {e.strerror}") from e

    def get_dir(self, path: str, dest: Path) -> None:
        """Copy the folder `path` into the host folder `dest`. Raises FileNotFoundError, NotADirectoryError."""
        self._check_open()
        self.fs.copy_out(self._abs(path), Path(dest))

    def read_first_text(self, folder: str, names: Sequence[str]) -> tuple[str, str] | None:
        """See `Sandbox.read_first_text`: regular files only, no link followed (nor a linked folder)."""
        self._check_open()
        try:
            found = self.fs.find(self._abs(folder).rstrip("/") or "/", follow=False)
        except OSError:
            return None
        if not isinstance(found.node, _Dir):
            return None
        for name in names:
            node = found.node.entries.get(name)
            if isinstance(node, _File):
                return name, bytes(node.data).decode("utf-8", errors="replace")
        return None

    # -- lifecycle ----------------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise SandboxError(f"sandbox {self.spec.name} is closed")

    def close(self) -> None:
        """Kill every job; later calls raise SandboxError. Idempotent."""
        if self._closed:
            return
        self._kill(lambda job: True)
        self._closed = True
        _OPEN.discard(self)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"FakeSandbox({self.spec.name!r}, workdir={self.workdir!r}, {'closed' if self._closed else 'open'})"


@dataclass
class FakeImage:
    """A built image: its files (each sandbox gets a copy), ENV and WORKDIR."""

    fs: FakeFS
    env: dict[str, str]
    workdir: str


class FakeBackend:
    """Builds and opens `FakeSandbox`es; the class interface of the real backends (`check`, `reap`, `build`, `open`)."""

    programs: ClassVar[dict[str, Program]] = {}
    """Scripted programs every sandbox opened through the registry gets (set it with a fixture)."""

    def __init__(self, programs: Mapping[str, Program] | None = None):
        self._programs = dict(type(self).programs if programs is None else programs)

    @classmethod
    def check(cls) -> tuple[bool, str]:
        return True, "in-memory fake"

    @classmethod
    def reap(cls, run_id: str | None = None) -> int:
        """Close this process's open fake sandboxes of `run_id` (all when None); returns how many."""
        boxes = [b for b in list(_OPEN) if run_id is None or b.spec.run_id == run_id]
        for box in boxes:
            box.close()
        return len(boxes)

    def build(self, spec: SandboxSpec) -> str:
        """Build the image of `spec` (checks it builds); returns a name for it. Raises as `open`."""
        self.image(spec)
        return f"fake:{spec.env_hash}"

    def stand_ins(self, spec: SandboxSpec) -> dict[str, str]:
        return {}

    def python_version(self, ref: str) -> str | None:
        return None

    def open(self, spec: SandboxSpec) -> FakeSandbox:
        """Build the image of `spec` and start a sandbox from it.

        Raises:
            UnsupportedError: a Dockerfile instruction outside the planner's subset, a prebuilt image without a
                Dockerfile, or a RUN step outside the fake shell's subset.
            BuildError: a COPY source is missing or a RUN step fails (with the log).
        """
        image = self.image(spec)
        workdir = spec.workdir or image.workdir
        image.fs.makedirs(workdir)
        return FakeSandbox(spec, image.fs, image_env=image.env, workdir=workdir, programs=self._programs)

    def image(self, spec: SandboxSpec) -> FakeImage:
        """Run the Dockerfile's build plan on a fresh skeleton (nothing is cached)."""
        if not spec.dockerfile.is_file():
            if spec.docker_image:
                raise UnsupportedError(
                    f"{spec.context_dir}: task {spec.name!r} names the prebuilt image {spec.docker_image!r} "
                    "and has no environment/Dockerfile; the fake sandbox cannot use it"
                )
            plan = BuildPlan(dockerfile=spec.dockerfile, env=dict(BASE_ENV))
        else:
            plan = plan_build(spec.dockerfile, spec.context_dir, base_env=dict(BASE_ENV))
        box = FakeSandbox(spec.for_build(), skeleton(), workdir="/", programs=self._programs)
        log_lines: list[str] = []
        try:
            for step in plan.steps:
                if isinstance(step, MakeDir):
                    box.fs.makedirs(step.path)
                elif isinstance(step, Copy):
                    _copy_step(box.fs, step)
                elif isinstance(step, Run):
                    _run_step(box, step, plan, log_lines)
            box.fs.makedirs(plan.workdir)
        except OSError as e:
            raise BuildError(f"{plan.dockerfile}: {e}", "\n".join(log_lines)[-4000:]) from e
        finally:
            box.close()
        env = {k: v for k, v in plan.env.items() if BASE_ENV.get(k) != v}
        return FakeImage(box.fs, env, plan.workdir)


def _copy_step(fs: FakeFS, step: Copy) -> None:
    def skip(source: Path) -> bool:
        return step.ignore.excluded(source.relative_to(step.context).as_posix())

    for source in step.sources:
        if source.is_dir():
            fs.copy_in(source, step.dest, chmod=step.chmod, skip=skip)
            continue
        into = step.dest_is_dir or isinstance(fs.lookup(step.dest), _Dir)
        dest = f"{step.dest.rstrip('/')}/{source.name}" if into else step.dest
        fs.copy_in(source.resolve(), dest, chmod=step.chmod)


def _run_step(box: FakeSandbox, step: Run, plan: BuildPlan, log_lines: list[str]) -> None:
    where = f"{plan.dockerfile}:{step.line}"
    box.fs.makedirs(step.workdir)
    res = box.exec(list(step.argv), env=step.env, cwd=step.workdir, timeout=box.spec.build_timeout_sec)
    log_lines += [f"#{step.line} RUN {step.text[:200]}", res.stdout, res.stderr]
    tail = "\n".join(log_lines)[-4000:]
    if box.unsupported is not None:
        raise UnsupportedError(f"{where}: RUN {step.text[:200]}: outside the fake sandbox's subset: {box.unsupported}")
    if res.ok:
        return
    why = f"timed out after {res.duration_s:.0f} s" if res.timed_out else f"exited {res.exit_code}"
    raise BuildError(f"{where}: RUN {step.text[:200]} {why}", tail)
