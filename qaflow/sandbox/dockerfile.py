"""A Dockerfile subset, evaluated statically into a build plan (no IO beyond reading the context).

Backends that cannot run Docker (bwrap) build from this plan: `FROM` is recorded (the host root
is the base), `ARG` (defaults only, no build args), `ENV` (`K=V ...` and legacy `K V`),
`WORKDIR`, `COPY` / local non-archive `ADD` (sources globbed in the build context, filtered by
`.dockerignore`, never outside it), `RUN` (shell and JSON form) and `SHELL` become steps;
`LABEL`, `EXPOSE`, `CMD`, `ENTRYPOINT`, `STOPSIGNAL`, `HEALTHCHECK`, `MAINTAINER` and
`USER root` are harmless and ignored. Anything else (another `USER`, `VOLUME`, `ONBUILD`,
`ADD <url>` or an archive, `COPY --from`, a second `FROM`, heredocs, `RUN --mount`) raises
`UnsupportedError` naming the Dockerfile and line and saying it needs the docker backend.

Variables (`$X`, `${X}`, `${X:-word}`, `${X:+word}`, `${X-word}`, `${X+word}`) are expanded
the way Docker does it: in every instruction but `RUN` (the shell does that, with ARG and ENV
in its environment), not inside single quotes, and with `\\$` as a literal dollar.
"""

from __future__ import annotations

import fnmatch
import json
import os
import posixpath
import re
from dataclasses import dataclass, field
from pathlib import Path

from docker.utils.build import PatternMatcher

from qaflow.errors import BuildError, UnsupportedError
from qaflow.text import numbered_dockerfile_lines

DEFAULT_WORKDIR = "/app"
DEFAULT_SHELL = ("/bin/sh", "-c")
IGNORED = frozenset({"LABEL", "EXPOSE", "CMD", "ENTRYPOINT", "STOPSIGNAL", "HEALTHCHECK", "MAINTAINER"})
ARCHIVE_SUFFIXES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz", ".tar.zst")


@dataclass(frozen=True)
class Instruction:
    keyword: str
    """Upper-cased instruction name."""
    args: str
    """Everything after the keyword, continuations joined."""
    line: int
    """1-based line where the instruction starts."""


@dataclass(frozen=True)
class MakeDir:
    """`WORKDIR`: the directory exists from here on."""

    path: str
    line: int


@dataclass(frozen=True)
class Copy:
    """Copy host `sources` to the container path `dest`.

    A source folder's contents go into `dest`. `dest_is_dir` is True when Docker treats the
    destination as a folder regardless (trailing slash, several sources, a folder source);
    otherwise `dest` is the file's path unless a folder already exists there.
    """

    sources: tuple[Path, ...]
    dest: str
    dest_is_dir: bool
    chmod: int | None
    context: Path
    ignore: DockerIgnore
    line: int


@dataclass(frozen=True)
class Run:
    argv: tuple[str, ...]
    env: dict[str, str]
    """ARG and ENV values in force at this step (ENV wins)."""
    workdir: str
    line: int
    text: str


Step = MakeDir | Copy | Run


@dataclass
class BuildPlan:
    dockerfile: Path
    base: str | None = None
    """The FROM reference, recorded only: the bwrap backend builds on the host's root."""
    steps: list[Step] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    """The image's ENV (ARG values are build-time only)."""
    workdir: str = DEFAULT_WORKDIR
    labels: dict[str, str] = field(default_factory=dict)


class DockerIgnore:
    """`.dockerignore` patterns as docker's SDK matches them for its own build contexts
    (`docker.utils.build.PatternMatcher`: last match wins, `!` re-includes, a folder's match covers its contents)."""

    def __init__(self, text: str = ""):
        patterns = [line.strip() for line in text.splitlines()]
        self._matcher = PatternMatcher([p for p in patterns if p and not p.startswith("#")])

    @classmethod
    def load(cls, context: Path) -> DockerIgnore:
        path = context / ".dockerignore"
        return cls(path.read_text(encoding="utf-8", errors="replace") if path.is_file() else "")

    def excluded(self, rel: str) -> bool:
        """Whether the context-relative POSIX path `rel` is left out of the build context."""
        return bool(self._matcher.matches(rel))


def logical_lines(text: str) -> list[tuple[int, str]]:
    """(start line, instruction text) with continuations joined and comment lines dropped
    (`qaflow.text.numbered_dockerfile_lines`).

    Raises:
        UnsupportedError: for a parser directive other than `syntax` (e.g. `# escape=`).
    """
    for number, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip()
        if re.match(r"#\s*escape\s*=", stripped, re.IGNORECASE):
            raise UnsupportedError(f"line {number}: parser directive {stripped!r}")
        if stripped and not stripped.startswith("#"):
            break  # directives only count before the first instruction
    return numbered_dockerfile_lines(text)


def parse(text: str) -> list[Instruction]:
    """Split Dockerfile text into instructions.

    Raises:
        UnsupportedError: for a parser directive other than `syntax`.
    """
    out = []
    for line, body in logical_lines(text):
        keyword, *rest = body.split(None, 1)
        out.append(Instruction(keyword.upper(), rest[0].strip() if rest else "", line))
    return out


class _Lexer:
    """Docker's word processing: quotes, backslash escapes and variable expansion in one pass."""

    def __init__(self, variables: dict[str, str]):
        self.vars = variables

    def words(self, text: str) -> list[str]:
        return self._scan(text, split=True)

    def word(self, text: str) -> str:
        return self._scan(text, split=False)[0] if text.strip() else ""

    def _scan(self, text: str, *, split: bool) -> list[str]:
        words: list[str] = []
        buf: list[str] = []
        started = False
        i = 0
        n = len(text)
        while i < n:
            ch = text[i]
            if ch.isspace() and split:
                if started:
                    words.append("".join(buf))
                    buf, started = [], False
                i += 1
                continue
            started = True
            if ch == "'":
                end = text.find("'", i + 1)
                if end == -1:
                    raise ValueError("unterminated single quote")
                buf.append(text[i + 1 : end])
                i = end + 1
            elif ch == '"':
                i += 1
                while i < n and text[i] != '"':
                    if text[i] == "\\" and i + 1 < n and text[i + 1] in '"\\$':
                        buf.append(text[i + 1])
                        i += 2
                    elif text[i] == "$":
                        value, i = self._variable(text, i)
                        buf.append(value)
                    else:
                        buf.append(text[i])
                        i += 1
                if i >= n:
                    raise ValueError("unterminated double quote")
                i += 1
            elif ch == "\\" and i + 1 < n:
                buf.append(text[i + 1])
                i += 2
            elif ch == "$":
                value, i = self._variable(text, i)
                buf.append(value)
            else:
                buf.append(ch)
                i += 1
        if started or not split:
            words.append("".join(buf))
        return words

    def _variable(self, text: str, i: int) -> tuple[str, int]:
        """Expand the variable at text[i] == '$'; return (value, index after it)."""
        if text.startswith("${", i):
            end = text.find("}", i + 2)
            if end == -1:
                raise ValueError("unterminated ${")
            body = text[i + 2 : end]
            match = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-+])(.*))?", body, re.DOTALL)
            if not match:
                raise ValueError(f"unsupported substitution ${{{body}}}")
            name, op, word = match.groups()
            value = self.vars.get(name)
            if op is None:
                return value or "", end + 1
            is_set = value is not None and (value != "" or not op.startswith(":"))
            if op.endswith("-"):
                return (value if is_set else self.word(word)) or "", end + 1
            return (self.word(word) if is_set else ""), end + 1
        match = re.compile(r"[A-Za-z_][A-Za-z0-9_]*").match(text, i + 1)
        if not match:
            return "$", i + 1
        return self.vars.get(match.group(0), ""), match.end()


def plan_build(
    dockerfile: Path,
    context: Path,
    *,
    default_workdir: str = DEFAULT_WORKDIR,
    base_env: dict[str, str] | None = None,
) -> BuildPlan:
    """Evaluate `dockerfile` (built in `context`) into a `BuildPlan`.

    `base_env` is the base image's environment (e.g. PATH), seen by `$PATH` in ENV and by RUN.

    Raises:
        UnsupportedError: for an instruction outside the subset, naming the file and line and
            saying it needs the docker backend.
        BuildError: for a malformed instruction or a COPY source that is missing or lies
            outside the build context.
        OSError: when the Dockerfile cannot be read.
    """
    planner = _Planner(dockerfile, context, default_workdir)
    planner.plan.env.update(base_env or {})
    return planner.run()


class _Planner:
    def __init__(self, dockerfile: Path, context: Path, default_workdir: str):
        self.path = dockerfile
        self.context = context
        self.root = context.resolve()
        self.plan = BuildPlan(dockerfile=dockerfile, workdir=default_workdir)
        self.global_args: dict[str, str] = {}
        self.args: dict[str, str] = {}
        self.shell: tuple[str, ...] = DEFAULT_SHELL
        self.seen_from = False
        self.ignore = DockerIgnore.load(context)
        self.line = 0

    def unsupported(self, what: str) -> UnsupportedError:
        return UnsupportedError(f"{self.path}:{self.line}: {what} needs the docker backend")

    def bad(self, what: str) -> BuildError:
        return BuildError(f"{self.path}:{self.line}: {what}")

    @property
    def variables(self) -> dict[str, str]:
        return {**self.args, **self.plan.env} if self.seen_from else dict(self.global_args)

    def run(self) -> BuildPlan:
        try:
            instructions = parse(self.path.read_text(encoding="utf-8"))
        except UnsupportedError as e:
            raise UnsupportedError(f"{self.path}: {e}; needs the docker backend") from e
        except UnicodeDecodeError as e:
            raise BuildError(f"{self.path}: not UTF-8 ({e.reason} at byte {e.start})") from e
        for ins in instructions:
            self.line = ins.line
            handler = getattr(self, f"_do_{ins.keyword.lower()}", None)
            if ins.keyword in IGNORED:
                self._ignored(ins)
            elif handler is None:
                raise self.unsupported(f"instruction {ins.keyword}")
            else:
                if "<<" in ins.args and ins.keyword in ("RUN", "COPY", "ADD"):
                    raise self.unsupported(f"{ins.keyword} with a heredoc")
                try:
                    handler(ins.args)
                except ValueError as e:
                    raise self.bad(f"{ins.keyword}: {e}") from e
        return self.plan

    def _ignored(self, ins: Instruction) -> None:
        if ins.keyword == "LABEL":
            words = _Lexer(self.variables).words(ins.args)
            for word in words:
                key, sep, value = word.partition("=")
                if sep:
                    self.plan.labels[key] = value

    def _do_from(self, args: str) -> None:
        if self.seen_from:
            raise self.unsupported("a multi-stage build (second FROM)")
        words = [w for w in _Lexer(self.global_args).words(args) if not w.startswith("--")]
        if not words:
            raise self.bad("FROM needs an image")
        self.plan.base = words[0]
        self.seen_from = True

    def _do_arg(self, args: str) -> None:
        for word in _Lexer(self.variables).words(args):
            name, sep, default = word.partition("=")
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
                raise self.bad(f"ARG: invalid name {name!r}")
            if not self.seen_from:
                self.global_args[name] = default
            elif sep:
                self.args[name] = default
            else:
                self.args[name] = self.global_args.get(name, "")

    def _do_env(self, args: str) -> None:
        lexer = _Lexer(self.variables)
        first = args.split(None, 1)[0] if args.strip() else ""
        if not first:
            raise self.bad("ENV needs a value")
        if "=" not in first:
            name, _, rest = args.strip().partition(" ")
            pairs = [(name, lexer.word(rest.strip()))]
        else:
            pairs = []
            for word in lexer.words(args):
                name, sep, value = word.partition("=")
                if not sep:
                    raise self.bad(f"ENV: {word!r} is not KEY=VALUE")
                pairs.append((name, value))
        for name, value in pairs:
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.-]*", name):
                raise self.bad(f"ENV: invalid name {name!r}")
            self.plan.env[name] = value

    def _do_workdir(self, args: str) -> None:
        target = _Lexer(self.variables).word(args.strip())
        if not target:
            raise self.bad("WORKDIR needs a path")
        self.plan.workdir = posixpath.normpath(posixpath.join(self.plan.workdir, target))
        self.plan.steps.append(MakeDir(self.plan.workdir, self.line))

    def _do_user(self, args: str) -> None:
        user = _Lexer(self.variables).word(args.strip())
        if user.split(":")[0] not in ("root", "0"):
            raise self.unsupported(f"USER {user}")

    def _do_shell(self, args: str) -> None:
        try:
            value = json.loads(args)
        except json.JSONDecodeError as e:
            raise self.bad("SHELL needs the JSON form") from e
        if not (isinstance(value, list) and value and all(isinstance(v, str) for v in value)):
            raise self.bad("SHELL needs a JSON list of strings")
        self.shell = tuple(value)

    def _do_run(self, args: str) -> None:
        if args.startswith("--"):
            raise self.unsupported(f"RUN flag {args.split()[0]}")
        argv: tuple[str, ...]
        if args.startswith("["):
            try:
                value = json.loads(args)
            except json.JSONDecodeError:
                value = None
            if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
                argv = tuple(value)
            else:
                argv = (*self.shell, args)
        else:
            argv = (*self.shell, args)
        env = {**self.args, **self.plan.env}
        self.plan.steps.append(Run(argv, env, self.plan.workdir, self.line, args))

    def _do_add(self, args: str) -> None:
        self._copy(args, add=True)

    def _do_copy(self, args: str) -> None:
        self._copy(args, add=False)

    def _copy(self, args: str, *, add: bool) -> None:
        keyword = "ADD" if add else "COPY"
        lexer = _Lexer(self.variables)
        if args.startswith("["):
            try:
                raw = json.loads(args)
            except json.JSONDecodeError as e:
                raise self.bad(f"{keyword}: malformed JSON form") from e
            if not (isinstance(raw, list) and all(isinstance(w, str) for w in raw)):
                raise self.bad(f"{keyword}: the JSON form needs a list of strings")
            words = [lexer.word(w) for w in raw]
        else:
            words = lexer.words(args)
        chmod = None
        while words and words[0].startswith("--"):
            flag, _, value = words.pop(0).partition("=")
            if flag == "--chmod":
                try:
                    chmod = int(value, 8)
                except ValueError as e:
                    raise self.unsupported(f"{keyword} --chmod={value}") from e
            elif flag not in ("--chown", "--link"):
                raise self.unsupported(f"{keyword} {flag}")
        if len(words) < 2:
            raise self.bad(f"{keyword} needs a source and a destination")
        *patterns, dest = words
        sources: list[Path] = []
        for pattern in patterns:
            if add and ("://" in pattern or pattern.startswith("git@")):
                raise self.unsupported(f"ADD from a URL ({pattern})")
            found = self._glob(pattern)
            if not found:
                raise self.bad(f"{keyword} source {pattern!r} not found in the build context {self.context}")
            sources.extend(found)
        if add and any(s.name.endswith(ARCHIVE_SUFFIXES) for s in sources):
            raise self.unsupported("ADD of an archive (auto-extraction)")
        dest_is_dir = dest.endswith("/") or len(sources) > 1 or any(s.is_dir() for s in sources)
        if len(sources) > 1 and not dest.endswith("/"):
            raise self.bad(f"{keyword} with several sources needs a destination folder ending in '/'")
        target = posixpath.normpath(posixpath.join(self.plan.workdir, dest))
        self.plan.steps.append(Copy(tuple(sources), target, dest_is_dir, chmod, self.context, self.ignore, self.line))

    def _glob(self, pattern: str) -> list[Path]:
        """Context paths matching `pattern`, checked to stay inside the context."""
        rel = posixpath.normpath(pattern.lstrip("/") or ".")
        if rel == ".." or rel.startswith("../"):
            raise self.bad(f"COPY source {pattern!r} lies outside the build context")
        if not any(c in rel for c in "*?["):
            candidates = [self.context / rel]
        else:
            candidates = [self.context]
            for part in rel.split("/"):
                nxt: list[Path] = []
                for base in candidates:
                    if not base.is_dir() or base.is_symlink():
                        continue
                    names = sorted(os.listdir(base))
                    nxt.extend(base / name for name in names if fnmatch.fnmatchcase(name, part))
                candidates = nxt
        found = []
        for path in candidates:
            if not os.path.lexists(path):
                continue
            resolved = path.resolve()
            if resolved != self.root and self.root not in resolved.parents:
                raise self.bad(f"COPY source {pattern!r} resolves outside the build context ({resolved})")
            relative = path.relative_to(self.context).as_posix()
            if relative != "." and self.ignore.excluded(relative):
                continue
            found.append(path)
        return found
