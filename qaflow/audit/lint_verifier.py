"""Advisory lint of the verifier's own logic: `lint` warnings, which never change the verdict.

The verifier is tests/ (per step of a multi-step task: the step's tests/ with the top tests/): its
shell scripts (test.sh, *.sh, scripts with a sh shebang), its Python files and the Python heredocs of
its scripts. Python is read with `ast`, shell with a small line parser. Every check leans towards
silence: code it cannot read (another language, a file that does not parse) keeps it quiet. Each
warning's evidence names the check, the file and the line.

- `wall_clock`: a comparison that uses the time now (Python `time.time()`, `datetime.now()/today()/
  utcnow()`, `date.today()`, `time.localtime()`...; shell `$(date ...)` without `-d/-r/-f`,
  `$EPOCHSECONDS`) against a literal (a number, a date string, `datetime(2024, 1, 1)`) or against the
  agent's output (what the verifier read from a file or a program), directly or through variables
  (`cutoff = datetime.now() - timedelta(days=7)`). Not flagged: durations (a difference with the time
  now, `$SECONDS`), the time now against another time-now value (`time.time() < deadline`, a timeout)
  and the time in prints, logs and f-strings.
- `names_only`: at least one existence check (`os.path.exists`, `Path.exists/is_file/is_dir`,
  `os.listdir`, `glob`, `[ -f ]`, `test -e`, `ls`, `find`) and nothing else: every call and command is
  an existence check or a harmless step (printing, exiting, making the log folder, writing the reward,
  running another verifier file), so no file of the agent is read and no program of the agent runs.
- `literal_only`: (a) every comparison of the verifier has a hard-coded literal (or a name bound only
  to literals) on one side and, on the other, the output of the agent's program (its stdout, what its
  functions return: subprocess, `os.popen`, a module it wrote, `$(/app/tool)`, `/app/tool | grep -q`);
  no comparison is against a value computed or loaded at run time, none against a file's content
  (exit statuses are left aside); (b) there are at most 3 distinct literals; (c) the instruction
  states none of them (the task is then to print that very text). A fixed expected value of a file
  the agent writes is the answer itself and is never flagged: with fixed inputs an agent cannot know
  it without doing the task, but a program checked only on fixed outputs can just print them.
- `set_e_before_reward`: tests/test.sh has errexit on (`set -e`, `set -eu...`, `set -o errexit`,
  `#!/bin/bash -e`) and a check command (pytest, python, diff, grep, test, `[`, a script) runs on its
  own line, outside `if`/`while`/`||`/`&&`, before the first line that writes the reward: when the
  check fails the script stops and no reward is written. An ERR or EXIT trap set before it, or a
  reward written before it (a 0 first), keeps it quiet.
"""

from __future__ import annotations

import ast
import re
import shlex
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from qaflow.audit.similarity import is_code
from qaflow.models.audit import AuditFinding
from qaflow.models.records import FindingCode, Severity
from qaflow.task import Task, _walk_files
from qaflow.text import utf8_text

MAX_BYTES = 256 * 1024
MAX_LITERALS = 3
REWARD_RE = re.compile(r"reward\.(txt|json)\b", re.IGNORECASE)
KINDS = ("status", "prog", "out", "now", "dur")
"""Kinds of a value, strongest first: an exit status, the output of the agent's program, something
read at run time (a file, a fixture), the time now, a duration."""

# --- what Python calls mean --------------------------------------------------------------------

NOW_CALLS = frozenset(
    {"time.time", "time.time_ns", "datetime.datetime.now", "datetime.datetime.utcnow", "datetime.datetime.today",
     "datetime.date.today", "pandas.Timestamp.now", "pandas.Timestamp.today", "arrow.now", "arrow.utcnow",
     "pendulum.now", "pendulum.today"}
)  # fmt: skip
NOW_WITHOUT_ARGS = frozenset({"time.localtime", "time.gmtime", "time.ctime", "time.asctime"})
DATE_TYPES = frozenset({"datetime", "date", "time", "fromisoformat", "strptime", "fromtimestamp", "Timestamp"})
OFFSETS = frozenset({"timedelta", "relativedelta", "DateOffset", "Timedelta"})
LOG_CALLS = frozenset({"print", "debug", "info", "warning", "warn", "error", "exception", "log", "write", "echo"})
READ_CALLS = frozenset(
    {"read", "read_text", "read_bytes", "readline", "readlines", "load", "loads", "open", "check_output",
     "getoutput", "getstatusoutput", "communicate", "urlopen", "reader", "DictReader", "read_csv", "read_json"}
)  # fmt: skip
READ_ATTRS = frozenset({"stdout", "stderr", "text", "content", "output"})
COMPARE_CALLS = frozenset(
    {"isclose", "allclose", "assert_allclose", "assert_array_equal", "assert_frame_equal", "array_equal",
     "assertEqual", "assertNotEqual", "assertIn", "assertNotIn", "assertAlmostEqual", "assertListEqual",
     "assertDictEqual", "assertCountEqual", "assertSequenceEqual", "assertMultiLineEqual"}
)  # fmt: skip
EXISTENCE_CALLS = frozenset(
    {"exists", "is_file", "is_dir", "isfile", "isdir", "lexists", "islink", "is_symlink", "access", "getsize",
     "stat", "lstat", "listdir", "iterdir", "glob", "rglob", "iglob", "scandir", "walk"}
)  # fmt: skip
HARMLESS_CALLS = frozenset(
    {"print", "exit", "_exit", "Path", "PurePath", "PosixPath", "join", "len", "sorted", "set", "list", "tuple",
     "dict", "str", "int", "float", "bool", "any", "all", "format", "append", "extend", "add", "sum", "min",
     "max", "enumerate", "zip", "range", "isinstance", "fail", "skip", "xfail", "fixture", "parametrize",
     "mkdir", "makedirs", "write", "write_text", "dumps", "dump", "basename", "dirname", "abspath", "resolve",
     "with_suffix", "relative_to", "expanduser", "startswith", "endswith", "lower", "upper", "strip",
     "items", "keys", "values", "is_absolute"}
)  # fmt: skip
"""Calls that read nothing of the agent's: with existence checks alone, a verifier checks names only."""
RUN_CALLS = frozenset(
    {"subprocess.run", "subprocess.call", "subprocess.check_call", "subprocess.check_output", "subprocess.Popen",
     "subprocess.getoutput", "subprocess.getstatusoutput", "os.system", "os.popen"}
)  # fmt: skip
LOAD_CALLS = frozenset(
    {"importlib.util.module_from_spec", "importlib.import_module", "runpy.run_path", "runpy.run_module", "__import__"}
)
"""Calls that load the agent's code as a module."""
KNOWN_LIBRARIES = frozenset(
    {"numpy", "pandas", "scipy", "sklearn", "torch", "requests", "httpx", "yaml", "toml", "tomli", "jwt", "PIL",
     "cv2", "bs4", "lxml", "pydantic", "attrs", "flask", "fastapi", "boto3", "psycopg2", "sqlalchemy",
     "matplotlib", "pytest", "_pytest", "__future__"}
)  # fmt: skip
KNOWN_TOOLS = frozenset(
    {"diff", "cmp", "sqlite3", "git", "grep", "cat", "ls", "jq", "sort", "head", "tail", "wc", "md5sum",
     "sha256sum", "sha1sum", "file", "stat", "find", "curl", "wget", "psql", "mysql", "redis-cli", "tar",
     "unzip", "gzip", "zcat", "du", "df", "ps", "pgrep", "id", "whoami", "uname", "which", "test", "true",
     "false", "echo", "printf", "env", "timeout", "pytest", "meson", "ninja", "make", "cmake", "gcc", "cc",
     "openssl", "docker", "kubectl", "systemctl", "nginx", "pip", "npm", "cargo", "go", "rustc", "javac"}
)  # fmt: skip
"""Programs that are not the agent's: a verifier running them reads data, it does not test a program."""
INTERPRETERS = re.compile(r"^(python[\d.]*|pypy3?|node|ruby|perl|php|bash|sh|dash|zsh|Rscript)$")
MODULES_OF_TESTS = frozenset({"pytest", "unittest", "json.tool", "pip", "venv", "http.server", "py_compile"})
STATUS_NAMES = frozenset({"returncode", "status", "status_code", "exit_code", "code", "rc", "ret", "__name__"})
SH_STATUS_NAME = re.compile(r"(?i)(^|_)(rc|ret|status|exit_?code|code|returncode)$")


@dataclass
class _Source:
    rel: str
    lang: str  # "py" | "sh"
    text: str
    offset: int = 0
    """Lines of its file before the text (a heredoc body)."""

    @cached_property
    def python(self) -> _Python | None:
        """The parsed Python source; None when it does not parse."""
        try:
            return _Python(ast.parse(self.text)) if self.lang == "py" else None
        except (SyntaxError, ValueError, RecursionError):
            return None


@dataclass
class _Facts:
    """What one verifier's files do."""

    existence: list[tuple[str, int]] = field(default_factory=list)
    other_logic: bool = False
    """A call or command besides existence checks and harmless steps."""
    literal_cmp: list[tuple[str, int, list[str], bool]] = field(default_factory=list)
    """(file, line, literals, whether the other side is the output of the agent's program)."""
    computed_cmp: bool = False


def verifier_findings(task: Task, test_dirs: list[Path]) -> list[AuditFinding]:
    """The four checks over the verifier; `test_dirs` is the top tests/ then each step's tests/."""
    top, steps = test_dirs[0], test_dirs[1:]
    scopes = [[s, top] if s != top else [s] for s in steps] or [[top]]
    sources = {d: _sources(task, d) for scope in scopes for d in scope}
    instruction = "\n".join(
        p.read_text(encoding="utf-8", errors="replace")
        for p in [task.path / "instruction.md"] + [s.parent / "instruction.md" for s in steps]
        if p.is_file()
    )
    findings: dict[tuple[str, str, int], AuditFinding] = {}
    for found, _ in sources.values():
        for source in found:
            new = _wall_clock(source)
            if source.lang == "sh" and Path(source.rel).name == "test.sh" and not source.offset:
                new += _set_e_before_reward(source)
            for finding in new:
                findings.setdefault(_key(finding), finding)
    for scope in scopes:
        if any(sources[d][1] for d in scope):
            continue  # code in another language, or that cannot be read: the verifier's logic is unknown
        facts = _Facts()
        files = [s for d in scope for s in sources[d][0]]
        for source in files:
            (_gather_py if source.lang == "py" else _gather_sh)(source, facts, files)
        for finding in _names_only(facts) + _literal_only(facts, instruction):
            findings.setdefault(_key(finding), finding)
    return list(findings.values())


def _key(finding: AuditFinding) -> tuple[str, str, int]:
    return finding.evidence["check"], finding.evidence["file"], finding.evidence["line"]


def _warning(check: str, rel: str, line: int, message: str, **extra: object) -> AuditFinding:
    evidence = {"check": check, "file": rel, "line": line, **extra}
    return AuditFinding(code=FindingCode.LINT, severity=Severity.WARNING, message=message, evidence=evidence)


def _sources(task: Task, folder: Path) -> tuple[list[_Source], bool]:
    """The Python and shell sources in `folder` (heredoc bodies included), and whether it also holds code
    of another language or code that cannot be read."""
    found: list[_Source] = []
    opaque = False
    for path in _walk_files(folder) if folder.is_dir() else []:
        if path.is_symlink() or not path.is_file():
            continue
        data = path.read_bytes()
        text = utf8_text(data) if len(data) <= MAX_BYTES else None
        suffix, first = path.suffix.lower(), (text or "").split("\n", 1)[0]
        if suffix == ".py" or (not suffix and re.match(r"#!.*\bpython", first)):
            lang = "py"
        elif suffix in (".sh", ".bash") or (not suffix and re.match(r"#!.*\b(ba|da|z|k)?sh\b", first)):
            lang = "sh"
        else:
            opaque = opaque or is_code(suffix)
            continue  # data, or another language
        if text is None:
            opaque = True
            continue
        rel = path.relative_to(task.path).as_posix()
        found.append(_Source(rel, lang, text))
        if lang == "sh":
            for line, opener, body in _shell_lines(text)[1]:
                if re.search(r"\bpython[\d.]*\b|\.py\b", opener):
                    found.append(_Source(rel, "py", body, offset=line))
    return found, opaque


# --- reading shell ---------------------------------------------------------------------------

HEREDOC_RE = re.compile(r"(?<!<)<<-?\s*(['\"]?)([A-Za-z_][\w.-]*)\1")
WRAPPERS = frozenset({"timeout", "env", "sudo", "exec", "command", "nice", "nohup", "stdbuf", "xvfb-run", "time"})
KEYWORDS = frozenset({"if", "then", "else", "elif", "do", "while", "until", "!", "{", "time"})
ASSIGN_RE = re.compile(r"^[A-Za-z_]\w*(\[[^]]*\])?\+?=")
SH_ASSIGN_RE = re.compile(r"^(?:(?:export|local|readonly|declare|typeset)(?:\s+-\w+)*\s+)?([A-Za-z_]\w*)=(.*)$")
BINARY_OPS = frozenset({"=", "==", "!=", "-eq", "-ne", "-lt", "-le", "-gt", "-ge", "<", ">", "=~"})
FILE_TESTS = frozenset({"-f", "-e", "-d", "-s", "-x", "-r", "-w", "-L", "-h", "-p", "-S", "-b", "-c", "-O", "-G"})


def _strip_comment(line: str) -> str:
    quote = ""
    for i, ch in enumerate(line):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"`":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1] in " \t;"):
            return line[:i]
    return line


def _shell_lines(text: str) -> tuple[list[tuple[int, str]], list[tuple[int, str, str]]]:
    """(line number, code) of each logical line (comments dropped, continuations joined, heredoc bodies
    left out), and (line number, code, body) of each heredoc."""
    raw = text.split("\n")
    lines: list[tuple[int, str]] = []
    bodies: list[tuple[int, str, str]] = []
    i = 0
    while i < len(raw):
        start, code = i, _strip_comment(raw[i])
        while code.rstrip().endswith("\\") and i + 1 < len(raw):
            i += 1
            code = code.rstrip()[:-1] + " " + _strip_comment(raw[i])
        i += 1
        for match in HEREDOC_RE.finditer(code):
            body: list[str] = []
            while i < len(raw) and raw[i].strip() != match.group(2):
                body.append(raw[i])
                i += 1
            i += 1
            bodies.append((start + 1, code, "\n".join(body) + "\n"))
        if code.strip():
            lines.append((start + 1, code))
    return lines, bodies


def _scan(code: str) -> Iterator[tuple[int, str, int]]:
    """(index, character, nesting depth in (...) and [[...]]) of the characters outside quotes."""
    quote, depth, i = "", 0, 0
    while i < len(code):
        ch = code[i]
        if ch == "\\" and quote != "'":
            i += 2
            continue
        if quote:
            quote = "" if ch == quote else quote
            i += 1
            continue
        if ch in "'\"`":
            quote = ch
        elif ch == "(" or code.startswith("[[", i):
            depth += 1
        elif (ch == ")" or code.startswith("]]", i)) and depth:
            depth -= 1
        yield i, ch, depth
        i += 2 if code.startswith(("[[", "]]"), i) else 1


def _segments(code: str) -> list[tuple[str, str]]:
    """(operator before, command) of the top-level commands of a line, split on ; && || | &."""
    parts: list[tuple[str, str]] = []
    op, start, skip = "", 0, -1
    for i, ch, depth in _scan(code):
        if i <= skip or depth or ch not in ";&|":
            continue
        sep = code[i : i + 2] if code[i : i + 2] in ("&&", "||", ";;") else ch
        if (sep == "&" and (code[i - 1 : i] in ("<", ">") or code[i + 1 : i + 2] == ">")) or code[i - 1 : i] == ">":
            continue  # 2>&1, &>file, >|
        parts.append((op, code[start:i].strip()))
        op, start, skip = sep, i + len(sep), i + len(sep) - 1
    parts.append((op, code[start:].strip()))
    return [(o, c) for o, c in parts if c]


def _substitutions(code: str) -> list[str]:
    """The commands inside $(...), <(...), >(...) and `...`."""
    found: list[str] = re.findall(r"`([^`]*)`", code)
    for match in re.finditer(r"[$<>]\((?!\()", code):
        depth = 1
        for j, ch, _ in _scan(code[match.end() :]):
            depth += {"(": 1, ")": -1}.get(ch, 0)
            if depth == 0:
                found.append(code[match.end() : match.end() + j])
                break
    return found


def _words(command: str) -> list[str]:
    """Words of a command, quotes kept; $(...) and [[...]] stay whole."""
    words: list[str] = []
    start = None
    for i, ch, depth in _scan(command + " "):
        if ch in " \t" and not depth:
            if start is not None:
                words.append(command[start:i])
            start = None
        elif start is None:
            start = i
    return words


def _unquote(word: str) -> str:
    try:
        return " ".join(shlex.split(word))
    except ValueError:
        return word.strip("'\"")


def _head(words: list[str]) -> tuple[str, list[str]]:
    """The command word and its arguments, past keywords, variable assignments and wrappers."""
    i = 0
    while i < len(words):
        word = words[i]
        if word in KEYWORDS or ASSIGN_RE.match(word):
            i += 1
        elif word in WRAPPERS:
            i += 1
            while i < len(words) and (words[i].startswith("-") or re.fullmatch(r"[\d.]+[smhd]?", words[i])):
                i += 1
        elif word.startswith(("[[", "((", "(")):
            return word, words[i + 1 :]
        else:
            return _unquote(word), words[i + 1 :]
    return "", []


def _commands(code: str) -> Iterator[tuple[str, str, list[str]]]:
    """(operator before, command word, arguments) of every command of a line, those in substitutions
    and subshells included."""
    for op, segment in _segments(code):
        head, args = _head(_words(segment))
        if head.startswith("(") and not head.startswith("(("):
            yield from _commands(head[1:-1] if head.endswith(")") else head[1:])
            continue
        yield op, head, args
        for inner in _substitutions(segment):
            yield from _commands(inner)


def _is_test(head: str) -> bool:
    return head in ("[", "test") or head.startswith("[[")


def _test_clauses(head: str, args: list[str]) -> list[list[str]]:
    """The clauses of a `[`, `[[` or `test` command: [op, arg] or [left, op, right]."""
    if head.startswith("[["):
        inner = head[2:].rstrip()
        args = _words(inner[:-2] if inner.endswith("]]") else inner) + args
    clauses: list[list[str]] = [[]]
    for word in args:
        if word in ("-a", "-o", "&&", "||", "!", "(", ")"):
            clauses.append([])
        elif word not in ("]", "]]"):
            clauses[-1].append(word)
    return [c for c in clauses if c]


def _comparisons(head: str, args: list[str]) -> list[tuple[str, str]]:
    """(left, right) of the binary comparisons of a test or arithmetic command."""
    if _is_test(head):
        return [(c[0], c[2]) for c in _test_clauses(head, args) if len(c) == 3 and c[1] in BINARY_OPS]
    if head.startswith("(("):
        parts = re.split(r"(\$\([^()]*\)|`[^`]*`)", " ".join([head, *args]).strip("() "))
        inner = "".join(  # bare names are variables here (outside command substitutions)
            part if i % 2 else re.sub(r"(?<![\w$#{])([A-Za-z_]\w*)", r"$\1", part) for i, part in enumerate(parts)
        )
        sides = re.split(r"<=|>=|==|!=|<|>", inner)
        return [(sides[0], sides[1])] if len(sides) == 2 else []
    return []


def _grep_pattern(args: list[str]) -> str | None:
    """The pattern of a grep command; None when it reads its patterns from a file."""
    for i, word in enumerate(args):
        if word in ("-e", "--regexp") and i + 1 < len(args):
            return args[i + 1]
        if word in ("-f", "--file"):
            return None
        if not word.startswith("-") or word == "-":
            return word
    return None


def _sh_now(text: str) -> str | None:
    """The first use of the time now in `text`: `date` that parses no given date, or $EPOCHSECONDS."""
    for match in re.finditer(r"\$\(\s*date\b([^)]*)\)|`\s*date\b([^`]*)`|\$\{?EPOCH(?:SECONDS|REALTIME)\b\}?", text):
        args = match.group(1) or match.group(2) or ""
        if not re.search(r"(^|\s)(-[a-zA-Z]*[drf]\b|--date|--reference|--file)", args):
            return match.group(0)
    return None


def _runs_agent(head: str, args: list[str]) -> bool:
    """A command running a program of the agent: an interpreter on a file or module outside /tests, or an
    executable path outside /tests and the system folders."""
    name = head.rsplit("/", 1)[-1]
    if INTERPRETERS.match(name):
        if args[:1] == ["-m"]:
            return len(args) > 1 and args[1] not in MODULES_OF_TESTS
        targets = [_unquote(a) for a in args if not a.startswith(("-", ">", "<", "2>"))]
        return "-c" not in args[:1] and bool(targets) and "/" in targets[0] and not targets[0].startswith("/tests")
    return "/" in head and not head.startswith(("/tests", "/usr/", "/bin/", "/sbin/", "/opt/", "$"))


class _Shell:
    """A parsed shell script: logical lines, heredocs, and what its variables hold."""

    def __init__(self, text: str):
        self.lines, self.heredocs = _shell_lines(text)
        assigned: dict[str, list[str]] = {}
        for _, code in self.lines:
            for _, segment in _segments(code):
                if SH_ASSIGN_RE.match(segment):
                    for word in _words(segment):
                        if m := re.match(r"([A-Za-z_]\w*)=(.*)$", word, re.DOTALL):
                            assigned.setdefault(m.group(1), []).append(m.group(2))
                elif m := re.match(r"(?:while\s+)?read\b(.*)", segment):
                    for name in re.findall(r"(?<!\S)([A-Za-z_]\w*)", m.group(1)):
                        assigned.setdefault(name, []).append("$(read)")
                elif m := re.match(r"for\s+([A-Za-z_]\w*)\s", segment):
                    assigned.setdefault(m.group(1), []).append("${loop}")
        self.constants = {
            n: [_unquote(v) for v in vs] for n, vs in assigned.items() if not any("$" in v or "`" in v for v in vs)
        }
        self.kinds: dict[str, str | None] = {}
        for _ in range(3):
            for name, values in assigned.items():
                if SH_STATUS_NAME.search(name) or any(re.search(r"\$\{?\?", v) for v in values):
                    self.kinds[name] = "status"
                    continue
                found = {self.kind(v) for v in values} - {None}
                if len(found) > 1 and found <= {"now", "dur"}:
                    self.kinds[name] = None  # reused for a start time and a duration: unclear
                else:
                    self.kinds[name] = next((k for k in KINDS if k in found), None)

    def kind(self, text: str) -> str | None:
        """What a word or expression holds (see KINDS), from the commands and variables it uses."""
        refs = {self.kinds.get(v) for v in re.findall(r"\$\{?([A-Za-z_]\w*)", text)}
        if re.search(r"\$\{?\?", text) or "status" in refs:
            return "status"
        if _sh_now(text) or "now" in refs:
            flat = re.sub(r"\$\((?!\()[^()]*\)|`[^`]*`", "X", text)
            return "dur" if re.search(r"[\w)}]\s*-\s*[\w${(]", flat) else "now"
        if re.search(r"\$\{?SECONDS\b", text) or "dur" in refs:
            return "dur"
        if "prog" in refs or any(_runs_agent(h, a) for s in _substitutions(text) for _, h, a in _commands(s)):
            return "prog"
        if "$(" in text or "`" in text or "out" in refs:
            return "out"
        return None

    def operand(self, word: str) -> tuple[str | None, list[str]]:
        """("literal", its values) for a literal side of a comparison (or variables holding only literals),
        else (its kind, [])."""
        if word.startswith("'") or not re.search(r"[$`]", word):
            return "literal", [_unquote(word)]
        names = re.findall(r"\$\{?([A-Za-z_]\w*)\}?", word)
        bare = re.sub(r"\$\{?[A-Za-z_]\w*\}?", "", _unquote(word)).strip()
        if names and not bare and "$(" not in word and "`" not in word and all(n in self.constants for n in names):
            return "literal", [v for n in names for v in self.constants[n]]
        return self.kind(word), []


# --- wall_clock ------------------------------------------------------------------------------


def _wall_clock(source: _Source) -> list[AuditFinding]:
    hits = _py_wall_clock(source.python) if source.lang == "py" else _sh_wall_clock(source.text)
    findings = []
    for line, what in hits:
        line += source.offset
        findings.append(
            _warning(
                "wall_clock",
                source.rel,
                line,
                f"{source.rel}:{line}: the verifier compares the time now ({what}) with a fixed value or the "
                "agent's output, so its verdict depends on when it runs (fixed dates in the data go stale); "
                "compare against a time the agent's run recorded, or derive the expected value from the inputs",
                uses=what,
            )
        )
    return findings


def _sh_wall_clock(text: str) -> list[tuple[int, str]]:
    shell = _Shell(text)
    hits: dict[int, str] = {}
    for number, code in shell.lines:
        for _, head, args in _commands(code):
            pairs = _comparisons(head, args)
            if head == "grep" and (pattern := _grep_pattern(args)):
                pairs = [(pattern, "$(input)")]
            elif head == "case" and args:
                pairs = [(args[0], "pattern")]
            for left, right in pairs:
                sides = [shell.kind(left), shell.kind(right)]
                if "now" in sides and sides != ["now", "now"] and not {"dur", "status"} & set(sides):
                    now = left if sides[0] == "now" else right
                    hits.setdefault(number, _sh_now(now) or now)
    return sorted(hits.items())


class _Python:
    """A parsed Python source: imports resolved, what names hold (see KINDS), literal names."""

    def __init__(self, tree: ast.Module):
        self.tree = tree
        self.aliases: dict[str, str] = {}
        self.parents: dict[ast.AST, ast.AST] = {}
        self.assigned: dict[str, list[tuple[ast.expr | None, bool]]] = {}
        """Per name, what it is bound to and whether directly (`x = value`: not a loop, not unpacking)."""
        modules: list[tuple[str, str]] = []  # (name bound, module)
        for node in ast.walk(tree):
            for child in ast.iter_child_nodes(node):
                self.parents[child] = node
            if isinstance(node, ast.Import):
                for alias in node.names:
                    top = alias.name.split(".")[0]
                    self.aliases[alias.asname or top] = alias.name if alias.asname else top
                    modules.append((alias.asname or top, alias.name))
            elif isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    self.aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
                    if not node.level:  # a relative import is the verifier's own package
                        modules.append((alias.asname or alias.name, node.module or ""))
            else:
                self._bind(node)
        agent_path = any(  # sys.path.insert(0, "/app"): the imports below may be the agent's modules
            isinstance(n, ast.Call)
            and self.dotted(n.func) in ("sys.path.insert", "sys.path.append")
            and any(isinstance(c, ast.Constant) and not str(c.value).startswith("/tests") for c in n.args[-1:])
            for n in ast.walk(tree)
        )
        self.agent_modules = {
            name
            for name, module in modules
            if agent_path and _foreign(module) and module.split(".")[0] not in KNOWN_LIBRARIES
        }
        self.literals = {
            name: [v for v, _ in values if v is not None]
            for name, values in self.assigned.items()
            if all(v is not None and direct and self.literal(v) is not None for v, direct in values)
        }
        self.kinds: dict[str, str | None] = dict.fromkeys(self.agent_modules, "prog")
        for _ in range(4):  # names defined from names: a few rounds reach a fixpoint in practice
            kinds = dict(self.kinds)
            for name, values in self.assigned.items():
                if name in self.agent_modules:
                    continue
                found = {"out" if v is FIXTURE else self.kind(v) if v is not None else None for v, _ in values}
                if len(found) == 1:
                    kinds[name] = found.pop()
                else:  # bound to values of different kinds: only what the agent produced counts
                    kinds[name] = next((k for k in ("prog", "out") if k in found), None)
            if kinds == self.kinds:
                break
            self.kinds = kinds

    def _bind(self, node: ast.AST) -> None:
        bind = self.assigned.setdefault
        if isinstance(node, ast.Assign):
            for target in node.targets:
                for name in _target_names(target):
                    bind(name, []).append((node.value, isinstance(target, ast.Name)))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            bind(node.target.id, []).append((node.value, True))
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            update = ast.BinOp(left=ast.Name(id=node.target.id), op=node.op, right=node.value)
            bind(node.target.id, []).append((update, False))
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            for name in _target_names(node.target):
                bind(name, []).append((node.iter, False))
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            for name in _target_names(node.optional_vars):
                bind(name, []).append((node.context_expr, False))
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for arg in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]:
                fixture = node.name.startswith("test") and arg.arg != "self"
                bind(arg.arg, []).append((FIXTURE if fixture else None, False))
            returns = [n.value for n in ast.walk(node) if isinstance(n, ast.Return) and n.value is not None]
            bind(node.name, []).extend((r, False) for r in returns)  # a call is what the function returns

    def dotted(self, node: ast.expr) -> str:
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name):
            parts.append(self.aliases.get(node.id, node.id))
        elif isinstance(node, ast.Call):
            parts.append(self.dotted(node.func) + "()")
        else:
            return ""
        return ".".join(reversed(parts))

    def last(self, node: ast.Call) -> str:
        return self.dotted(node.func).rsplit(".", 1)[-1]

    def is_now(self, node: ast.AST) -> bool:
        if not isinstance(node, ast.Call):
            return False
        name = self.dotted(node.func)
        if name in NOW_WITHOUT_ARGS:
            return not node.args
        return name in NOW_CALLS or (name == "time.strftime" and len(node.args) == 1)

    def runs_agent(self, node: ast.Call) -> bool:
        name = self.dotted(node.func)
        if name in RUN_CALLS:
            return _runs_agent_program(self, node)
        return name in LOAD_CALLS

    def kind(self, node: ast.expr) -> str | None:
        """What an expression holds (see KINDS), or None."""
        if isinstance(node, ast.Name):
            return self.kinds.get(node.id)
        if isinstance(node, (ast.Attribute, ast.Subscript, ast.Starred)):
            inner = self.kind(node.value)
            if isinstance(node, ast.Attribute) and node.attr in STATUS_NAMES and inner in ("prog", "out"):
                return "status"
            if isinstance(node, ast.Attribute) and node.attr in READ_ATTRS and inner != "now":
                return inner if inner == "prog" else "out"
            return inner
        if isinstance(node, ast.Call):
            if self.is_now(node):
                return "now"
            if self.runs_agent(node):
                return "prog"
            if self.last(node) in ("poll", "wait"):
                return "status"
            inner = self.kind(node.func)
            args = _strongest(self.kind(a) for a in [*node.args, *(k.value for k in node.keywords)])
            if "prog" in (inner, args):
                return "prog"
            if inner in ("now", "dur"):
                return inner  # a method of a time: now.date(), elapsed.total_seconds()
            return "out" if self.last(node) in READ_CALLS else _strongest([inner, args])
        if isinstance(node, ast.BinOp):
            left, right = self.kind(node.left), self.kind(node.right)
            if "now" in (left, right) and isinstance(node.op, ast.Sub):
                offset = isinstance(node.right, ast.Call) and self.last(node.right) in OFFSETS
                return "now" if left == "now" and offset else "dur"  # now - 7 days; an elapsed time or an age
            return "now" if "now" in (left, right) else _strongest([left, right])  # now + 30 days
        if isinstance(node, ast.JoinedStr):
            return _strongest(self.kind(v.value) for v in node.values if isinstance(v, ast.FormattedValue))
        if isinstance(node, ast.IfExp):
            return _strongest([self.kind(node.body), self.kind(node.orelse)])
        return None

    def literal(self, node: ast.expr, seen: frozenset[str] = frozenset()) -> ast.expr | None:
        """The literal `node` stands for (itself, or the value of a name bound once to a literal), else None."""
        if isinstance(node, ast.Constant):
            return node
        parts: list[ast.expr | None] = []
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            parts = [node.operand]
        elif isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            parts = list(node.elts)
        elif isinstance(node, ast.Dict):
            parts = [*node.keys, *node.values]
        elif isinstance(node, ast.BinOp):
            parts = [node.left, node.right]
        elif isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords:
            if self.last(node) in ("approx", "set", "frozenset", "list", "tuple", "sorted", "Path", "Decimal"):
                parts = [node.args[0]]
        elif isinstance(node, ast.Name) and node.id not in seen:
            values = self.assigned.get(node.id, [])
            if len(values) == 1 and values[0][1] and values[0][0] is not None:
                return self.literal(values[0][0], seen | {node.id})
        if parts and all(p is not None and self.literal(p, seen) is not None for p in parts):
            return node
        return None

    def date_literal(self, node: ast.expr) -> bool:
        """A literal, or a date or time built from literals (`datetime(2024, 1, 1)`)."""
        if self.literal(node) is not None:
            return True
        if isinstance(node, ast.Call) and self.last(node) in DATE_TYPES and node.args:
            return all(self.literal(a) is not None for a in node.args)
        return False

    def logged(self, node: ast.AST) -> bool:
        """`node` is inside an f-string or the arguments of a print or logging call."""
        parent = self.parents.get(node)
        while parent is not None and not isinstance(parent, ast.stmt):
            if isinstance(parent, ast.JoinedStr) or (isinstance(parent, ast.Call) and self.last(parent) in LOG_CALLS):
                return True
            parent = self.parents.get(parent)
        return False

    def comparisons(self) -> Iterator[tuple[int, list[ast.expr]]]:
        """(line, operands) of every comparison: `a == b`, `x in y`, `isclose(a, b)`, `assertEqual(a, b)`."""
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Compare) and not all(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops):
                operands = [node.left, *node.comparators]
            elif isinstance(node, ast.Call) and len(node.args) >= 2 and self.last(node) in COMPARE_CALLS:
                operands = list(node.args[:2])
            else:
                continue
            if not self.logged(node):
                yield node.lineno, operands

    def names_behind(self, node: ast.expr, depth: int = 4) -> set[str]:
        """The names a value is computed from, followed through their assignments."""
        found: set[str] = set()
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name) and sub.id not in found:
                found.add(sub.id)
                for value, _ in self.assigned.get(sub.id, []) if depth else []:
                    found |= self.names_behind(value, depth - 1) if value is not None else set()
        return found

    def now_call(self, node: ast.expr, depth: int = 4) -> str | None:
        """The time-now call behind a value (followed through names), as code."""
        for sub in ast.walk(node):
            if self.is_now(sub):
                return ast.unparse(sub)
            if isinstance(sub, ast.Name) and depth and self.kinds.get(sub.id) == "now":
                for value, _ in self.assigned.get(sub.id, []):
                    if value is not None and (found := self.now_call(value, depth - 1)):
                        return found
        return None


FIXTURE = ast.Name(id="<pytest fixture>")
"""What a test function's parameter is bound to: a fixture, usually the agent's output."""


def _strongest(kinds: Iterator[str | None] | list[str | None]) -> str | None:
    found = set(kinds)
    return next((k for k in KINDS if k in found and k != "status"), None)


def _foreign(module: str) -> bool:
    return module.split(".")[0] not in sys.stdlib_module_names


def _target_names(target: ast.expr) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, (ast.Tuple, ast.List)):
        return [n for e in target.elts for n in _target_names(e)]
    return _target_names(target.value) if isinstance(target, ast.Starred) else []


def _runs_agent_program(py: _Python, node: ast.Call) -> bool:
    """A subprocess call whose command is not the verifier's own file nor a known tool."""
    first = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == "args"), None)
    if isinstance(first, ast.Name) and len(bound := py.assigned.get(first.id, [])) == 1 and bound[0][1]:
        first = bound[0][0]  # command = [...]; subprocess.run(command)
    words: list[str] = []
    if isinstance(first, ast.Constant) and isinstance(first.value, str):
        words = first.value.split()
    for element in first.elts if isinstance(first, (ast.List, ast.Tuple)) else []:
        if py.dotted(element) == "sys.executable":
            words.append("python3")
            continue
        for sub in ast.walk(element):
            if isinstance(sub, ast.Name) and sub.id in py.literals:
                constants = [c.value for v in py.literals[sub.id] for c in ast.walk(v) if isinstance(c, ast.Constant)]
                words += [str(c) for c in constants[:1]]
                break
            if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
                words.append(sub.value)
                break
    for word in words:
        name = word.strip("'\"").rsplit("/", 1)[-1]
        if word.startswith("-") or INTERPRETERS.match(name):
            continue
        if word.startswith("/tests") or word in MODULES_OF_TESTS:
            return False
        return "/" in word or name not in KNOWN_TOOLS
    return False


def _py_wall_clock(py: _Python | None) -> list[tuple[int, str]]:
    if py is None:
        return []
    hits: dict[int, str] = {}
    given = {  # names passed to the agent's program: a time it got as input is no wall-clock dependence
        n.id
        for call in ast.walk(py.tree)
        if isinstance(call, ast.Call) and py.kind(call) == "prog"
        for arg in [*call.args, *(k.value for k in call.keywords)]
        for n in ast.walk(arg)
        if isinstance(n, ast.Name)
    }
    for line, operands in py.comparisons():
        kinds = [py.kind(o) for o in operands]
        if "now" not in kinds:
            continue
        now = operands[kinds.index("now")]
        others = [o for o, k in zip(operands, kinds, strict=True) if k != "now"]
        if py.names_behind(now) & given:
            continue
        if any(py.kind(o) in ("prog", "out") or py.date_literal(o) for o in others):
            call, shown = py.now_call(now), ast.unparse(now)
            hits.setdefault(line, shown if call in (None, shown) else f"{shown}, from {call}")
    return sorted(hits.items())


# --- names_only and literal_only: what the files do ---------------------------------------------


def _gather_py(source: _Source, facts: _Facts, files: list[_Source]) -> None:
    py = source.python
    if py is None:
        facts.other_logic = facts.computed_cmp = True
        return
    if any(_foreign(m.split(".")[0]) for m in _imports(py.tree)):
        facts.other_logic = True  # a module of the agent's or a library: code runs
    for node in ast.walk(py.tree):
        if not isinstance(node, ast.Call):
            continue
        name, last = py.dotted(node.func), py.last(node)
        if last in EXISTENCE_CALLS:
            facts.existence.append((source.rel, source.offset + node.lineno))
        elif not (last in HARMLESS_CALLS or name in ("sys.exit", "os._exit") or (last == "open" and _writes(node))):
            facts.other_logic = True
    for line, operands in py.comparisons():
        kinds = [py.kind(o) for o in operands]
        if "status" in kinds or any(isinstance(o, ast.Name) and o.id in STATUS_NAMES for o in operands):
            continue
        literals = [py.literal(o) for o in operands]
        values = [_literal_value(lit) for lit in literals if lit is not None]
        if len(values) == len(operands) or (values and set(values) <= {"None", "True", "False", "''"}):
            continue
        if not values:
            facts.computed_cmp = True
            continue
        prog = all(k == "prog" for k, lit in zip(kinds, literals, strict=True) if lit is None)
        facts.literal_cmp.append((source.rel, source.offset + line, values, prog))


def _imports(tree: ast.Module) -> list[str]:
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            found.append("." if node.level else node.module or "")
    return [m for m in found if m.split(".")[0] not in ("pytest", "_pytest", "__future__")]


def _writes(node: ast.Call) -> bool:
    mode = node.args[1] if len(node.args) > 1 else next((k.value for k in node.keywords if k.arg == "mode"), None)
    return isinstance(mode, ast.Constant) and isinstance(mode.value, str) and bool(set(mode.value) & set("wax"))


def _literal_value(node: ast.expr) -> str:
    try:
        return repr(ast.literal_eval(node))
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return ast.unparse(node)


NEUTRAL_COMMANDS = frozenset(
    {"echo", "printf", "exit", "mkdir", "cd", "true", "false", ":", "set", "export", "local", "return", "trap",
     "shift", "unset", "readonly", "declare", "sleep", "touch", "rm", "chmod", "fi", "done", "esac", "}", "then",
     "else", "do", "for", "in", "wait", "source", "."}
)  # fmt: skip
"""Shell commands that read nothing of the agent's."""


def _gather_sh(source: _Source, facts: _Facts, files: list[_Source]) -> None:
    shell = _Shell(source.text)
    functions = {m.group(1) for _, c in shell.lines if (m := re.match(r"\s*(?:function\s+)?([\w-]+)\s*\(\)", c))}
    python_heredocs = {n for n, opener, _ in shell.heredocs if re.search(r"\bpython[\d.]*\b|\.py\b", opener)}
    names = {s.rel.rsplit("/", 1)[-1] for s in files}
    for number, code in shell.lines:
        code = re.sub(r"^\s*(?:function\s+)?[\w-]+\s*\(\)\s*", "", code)
        if re.search(r"(?<![<\d])<(?![<(&])", re.sub(r"\[\[.*?\]\]|\(\(.*?\)\)|'[^']*'|\"[^\"]*\"", "", code)):
            facts.other_logic = True  # an input redirection reads a file
        before: tuple[str, list[str]] = ("", [])
        for op, head, args in _commands(code):
            own = _runs_verifier_file(head, args, names, number in python_heredocs)
            clauses = _test_clauses(head, args) if _is_test(head) else []
            if any(len(c) == 2 and c[0] in FILE_TESTS for c in clauses) or (
                head in ("ls", "find", "stat") and not {"-exec", "-execdir", "-delete"} & set(args)
            ):
                facts.existence.append((source.rel, number))
            elif not (own or clauses or not head or head in functions or head in NEUTRAL_COMMANDS):
                facts.other_logic = True
            for left, right in _comparisons(head, args):
                _sh_compare(shell, source.rel, number, left, right, facts)
            if head in ("grep", "egrep", "fgrep"):
                piped = before if op == "|" else None
                _sh_grep(source.rel, number, args, piped, names, facts)
            elif head in ("diff", "cmp", "comm"):
                facts.computed_cmp = True
            before = (head, args)


def _runs_verifier_file(head: str, args: list[str], names: set[str], heredoc: bool) -> bool:
    """python3 /tests/x.py, pytest /tests/..., bash /tests/x.sh, python3 - <<EOF (a heredoc read as Python)."""
    name = head.rsplit("/", 1)[-1]
    targets = [_unquote(a) for a in args if not a.startswith(("-", ">", "<", "2>", "1>", "&"))]
    if name in ("pytest", "py.test") or (INTERPRETERS.match(name) and args[:2] == ["-m", "pytest"]):
        paths = [t for t in targets if "/" in t or t.endswith(".py")]
        return bool(paths) and all(t.startswith("/tests") or t.rsplit("/", 1)[-1] in names for t in paths)
    if INTERPRETERS.match(name):
        if heredoc and (not targets or targets[0] == "-"):
            return True
        return bool(targets) and (targets[0].startswith("/tests/") or targets[0] in names)
    return head.startswith("/tests/")


def _sh_compare(shell: _Shell, rel: str, line: int, left: str, right: str, facts: _Facts) -> None:
    sides = [shell.operand(left), shell.operand(right)]
    kinds = [kind for kind, _ in sides]
    if "status" in kinds or kinds == ["literal", "literal"]:
        return
    values = [repr(v) for kind, vs in sides if kind == "literal" for v in vs]
    if not values:
        facts.computed_cmp = True
    elif set(values) != {"''"}:
        facts.literal_cmp.append((rel, line, values, all(k == "prog" for k in kinds if k != "literal")))


def _sh_grep(
    rel: str, line: int, args: list[str], piped: tuple[str, list[str]] | None, names: set[str], facts: _Facts
) -> None:
    pattern = _grep_pattern(args)
    if pattern is None:
        facts.computed_cmp = True
        return
    files = [_unquote(a) for a in args[args.index(pattern) + 1 :] if not a.startswith("-")]
    if piped and (_runs_verifier_file(*piped, names, False) or piped[0] in ("pytest", "py.test")):
        return  # reads the verifier's own test report
    if files and all(f.startswith(("/logs/", "/tmp/", "$")) for f in files):
        return
    if pattern.startswith("'") or "$" not in pattern.strip("'\"").rstrip("$"):
        prog = piped is not None and _runs_agent(*piped)
        facts.literal_cmp.append((rel, line, [repr(_unquote(pattern).strip("^$"))], prog))
    else:
        facts.computed_cmp = True


# --- names_only and literal_only: the verdicts -------------------------------------------------


def _names_only(facts: _Facts) -> list[AuditFinding]:
    if not facts.existence or facts.other_logic:
        return []
    rel, line = facts.existence[0]
    checks = [f"{r}:{n}" for r, n in dict.fromkeys(facts.existence)]
    return [
        _warning(
            "names_only",
            rel,
            line,
            f"{rel}:{line}: the verifier only checks that files exist ({', '.join(checks[:5])}) and never reads "
            "their content or runs the agent's program: an empty or wrong file passes; compare the content "
            "with what the task asks for",
            checks=checks,
        )
    ]


def _literal_only(facts: _Facts, instruction: str) -> list[AuditFinding]:
    if facts.computed_cmp or not facts.literal_cmp or not all(prog for *_, prog in facts.literal_cmp):
        return []
    literals = sorted({v for _, _, values, _ in facts.literal_cmp for v in values})
    if len(literals) > MAX_LITERALS:
        return []
    for leaf in (leaf for value in literals for leaf in _leaves(value)):
        if leaf and re.search(rf"(?<![\w.]){re.escape(leaf)}(?!\w|\.\d)", instruction):
            return []  # the instruction states it: the task is to produce that very text
    rel, line, _, _ = facts.literal_cmp[0]
    return [
        _warning(
            "literal_only",
            rel,
            line,
            f"{rel}:{line}: every check compares the output of the agent's program with the hard-coded "
            f"literal(s) {', '.join(literals)}: the verifier accepts exactly these literals; an agent that prints "
            "them passes without doing the task: check them against inputs the agent cannot predict or derive "
            "them from inputs",
            literals=literals,
            comparisons=[f"{r}:{n}" for r, n, _, _ in facts.literal_cmp],
        )
    ]


def _leaves(value: str) -> list[str]:
    """The scalars of a literal's repr, as text."""
    try:
        stack = [ast.literal_eval(value)]
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return [value.strip()]
    found: list[str] = []
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack += [*item.keys(), *item.values()]
        elif isinstance(item, (list, tuple, set, frozenset)):
            stack += list(item)
        else:
            found.append(str(item).strip())
    return found


# --- set_e_before_reward ---------------------------------------------------------------------

ERREXIT_ON_RE = re.compile(r"^\s*set\s+(?:.*\s)?(?:-[a-zA-Z]*e[a-zA-Z]*|-o\s+errexit)(?:\s|$)")
ERREXIT_OFF_RE = re.compile(r"^\s*set\s+(?:.*\s)?(?:\+[a-zA-Z]*e[a-zA-Z]*|\+o\s+errexit)(?:\s|$)")
SHEBANG_E_RE = re.compile(r"^#!\S*(?:\s+-S)?(?:\s+\S*\b(?:ba|da|z|k)?sh)?\s+-[a-zA-Z]*e")
TRAP_RE = re.compile(r"^\s*trap\s+.*\s(?:ERR|EXIT|0)\b")
FUNCTION_RE = re.compile(r"\s*(?:function\s+)?([\w-]+)\s*\(\)")
CHECK_COMMANDS = frozenset({"[", "test", "pytest", "py.test", "diff", "cmp", "grep", "egrep", "fgrep", "jq", "bats"})
RUNNERS = frozenset({"uv", "uvx", "npm", "npx", "yarn", "pnpm", "go", "cargo", "make", "poetry", "tox", "nox"})
"""Tools that run checks only when asked to (`uv run pytest`, `npm test`, `go test`)."""


def _set_e_before_reward(source: _Source) -> list[AuditFinding]:
    shell = _Shell(source.text)
    first = source.text.split("\n", 1)[0]
    errexit = 1 if SHEBANG_E_RE.match(first) else 0
    reward_vars = {m.group(1) for _, c in shell.lines if (m := SH_ASSIGN_RE.match(c.strip())) and REWARD_RE.search(c)}
    writers, lines = _functions(shell.lines)
    rewards = [n for n, c in lines if _writes_reward(c.strip(), reward_vars, writers)]
    if not rewards:
        return []  # written by a helper, or never (the reward check of lint.py says so)
    pipefail = False
    for number, code in lines:
        stripped = " ".join(code.split())
        if number >= rewards[0] or TRAP_RE.match(stripped):
            return []
        if ERREXIT_OFF_RE.match(stripped):
            errexit = 0
        elif ERREXIT_ON_RE.match(stripped):
            errexit = number
        pipefail = pipefail or bool(re.match(r"\s*set\s.*pipefail", stripped))
        if not errexit or re.match(r"(?:if|elif|while|until|set)\b|!\s", stripped) or "&&" in code or "||" in code:
            continue
        segments = _segments(code)
        if not pipefail and any(op == "|" for op, _ in segments):
            segments = segments[-1:]  # without pipefail only the last command's status counts
        if any(_can_fail(s) for _, s in segments):
            where = "the shebang" if errexit == 1 and SHEBANG_E_RE.match(first) else f"line {errexit}"
            return [
                _warning(
                    "set_e_before_reward",
                    source.rel,
                    number,
                    f"{source.rel}:{number}: `{stripped}` runs under `set -e` ({where}) before the reward is "
                    f"written (line {rewards[0]}): when it fails the script stops and no reward is written; write "
                    "one on both outcomes, e.g. `if CHECKS; then echo 1; else echo 0; fi > /logs/verifier/reward.txt`",
                    command=stripped,
                    errexit_line=errexit,
                    reward_line=rewards[0],
                )
            ]
    return []


def _can_fail(segment: str) -> bool:
    """A check: a test, a comparison tool, a test runner, an interpreter running code, or a script (not an
    install step, nor a version query)."""
    head, args = _head(_words(segment))
    if not head:  # an assignment: its status is that of its command substitutions
        return any(_can_fail(inner) for inner in _substitutions(segment))
    name, plain = head.rsplit("/", 1)[-1], [_unquote(a) for a in args]
    if {"--version", "-V", "--help"} & set(plain):
        return False
    if head.startswith(("[[", "((")) or name in CHECK_COMMANDS:
        return True
    if INTERPRETERS.match(name):
        if plain[:1] == ["-m"]:
            return len(plain) > 1 and plain[1] not in ("pip", "venv", "ensurepip", "uv")
        return any(not a.startswith("-") for a in plain)  # a script, code, or a heredoc
    if name in RUNNERS:
        return any(re.fullmatch(r"pytest|py\.test|tests?|check|jest|vitest|mocha", a) for a in plain)
    return "/" in head and not head.startswith(("/usr/", "/bin/", "/sbin/"))


def _functions(lines: list[tuple[int, str]]) -> tuple[set[str], list[tuple[int, str]]]:
    """The functions whose body names the reward file, and the lines outside function definitions."""
    writers: set[str] = set()
    outside: list[tuple[int, str]] = []
    current, depth = "", 0
    for number, code in lines:
        if not depth and (match := FUNCTION_RE.match(code)):
            current = match.group(1)
        if not current:
            outside.append((number, code))
            continue
        depth += code.count("{") - code.count("}")
        if REWARD_RE.search(code):
            writers.add(current)
        if depth <= 0:
            current, depth = "", 0
    return writers, outside


def _writes_reward(code: str, reward_vars: set[str], writers: set[str]) -> bool:
    """A line that writes the reward file: names it (or a variable holding it), or calls a function that does."""
    if SH_ASSIGN_RE.match(code) and "$(" not in code:
        return False
    if REWARD_RE.search(code) or any(re.search(rf"\$\{{?{v}\b", code) for v in reward_vars):
        return True
    return any(head in writers for _, head, _ in _commands(code))
