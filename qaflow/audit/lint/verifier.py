"""Advisory lint of the verifier's own logic: `lint` warnings, which never change the verdict.

The verifier is tests/ (per step of a multi-step task: the step's tests/ with the top tests/): its
shell scripts (test.sh, *.sh, scripts with a sh shebang), its Python files and the Python heredocs of
its scripts. Python is read with `ast` (`python.py`), shell with a small line parser (`shell.py`).
Every check leans towards silence: code it cannot read (another language, a file that does not parse)
keeps it quiet. Each warning's evidence names the check, the file and the line.

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
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from qaflow.audit.lint import shell as sh
from qaflow.audit.lint.kinds import INTERPRETERS
from qaflow.audit.lint.python import STATUS_NAMES, Python, foreign
from qaflow.audit.lint.similarity import is_code
from qaflow.models.audit import AuditFinding
from qaflow.models.records import FindingCode, Severity
from qaflow.task import Task, _walk_files
from qaflow.text import utf8_text

MAX_BYTES = 256 * 1024
MAX_LITERALS = 3
REWARD_RE = re.compile(r"reward\.(txt|json)\b", re.IGNORECASE)


@dataclass
class _Source:
    rel: str
    lang: str  # "py" | "sh"
    text: str
    offset: int = 0
    """Lines of its file before the text (a heredoc body)."""

    @cached_property
    def python(self) -> Python | None:
        """The parsed Python source; None when it does not parse."""
        try:
            return Python(ast.parse(self.text)) if self.lang == "py" else None
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
            for line, opener, body in sh.logical_lines(text)[1]:
                if re.search(r"\bpython[\d.]*\b|\.py\b", opener):
                    found.append(_Source(rel, "py", body, offset=line))
    return found, opaque


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
    shell = sh.Shell(text)
    hits: dict[int, str] = {}
    for number, code in shell.lines:
        for _, head, args in sh.commands(code):
            pairs = sh.comparisons(head, args)
            if head == "grep" and (pattern := sh.grep_pattern(args)):
                pairs = [(pattern, "$(input)")]
            elif head == "case" and args:
                pairs = [(args[0], "pattern")]
            for left, right in pairs:
                sides = [shell.kind(left), shell.kind(right)]
                if "now" in sides and sides != ["now", "now"] and not {"dur", "status"} & set(sides):
                    now = left if sides[0] == "now" else right
                    hits.setdefault(number, sh.time_now(now) or now)
    return sorted(hits.items())


def _py_wall_clock(py: Python | None) -> list[tuple[int, str]]:
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
FILE_TESTS = frozenset({"-f", "-e", "-d", "-s", "-x", "-r", "-w", "-L", "-h", "-p", "-S", "-b", "-c", "-O", "-G"})


def _gather_py(source: _Source, facts: _Facts, files: list[_Source]) -> None:
    py = source.python
    if py is None:
        facts.other_logic = facts.computed_cmp = True
        return
    if any(foreign(m.split(".")[0]) for m in _imports(py.tree)):
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
    shell = sh.Shell(source.text)
    functions = {m.group(1) for _, c in shell.lines if (m := re.match(r"\s*(?:function\s+)?([\w-]+)\s*\(\)", c))}
    python_heredocs = {n for n, opener, _ in shell.heredocs if re.search(r"\bpython[\d.]*\b|\.py\b", opener)}
    names = {s.rel.rsplit("/", 1)[-1] for s in files}
    for number, code in shell.lines:
        code = re.sub(r"^\s*(?:function\s+)?[\w-]+\s*\(\)\s*", "", code)
        if re.search(r"(?<![<\d])<(?![<(&])", re.sub(r"\[\[.*?\]\]|\(\(.*?\)\)|'[^']*'|\"[^\"]*\"", "", code)):
            facts.other_logic = True  # an input redirection reads a file
        before: tuple[str, list[str]] = ("", [])
        for op, head, args in sh.commands(code):
            own = _runs_verifier_file(head, args, names, number in python_heredocs)
            clauses = sh.test_clauses(head, args) if sh.is_test(head) else []
            if any(len(c) == 2 and c[0] in FILE_TESTS for c in clauses) or (
                head in ("ls", "find", "stat") and not {"-exec", "-execdir", "-delete"} & set(args)
            ):
                facts.existence.append((source.rel, number))
            elif not (own or clauses or not head or head in functions or head in NEUTRAL_COMMANDS):
                facts.other_logic = True
            for left, right in sh.comparisons(head, args):
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
    targets = [sh.unquote(a) for a in args if not a.startswith(("-", ">", "<", "2>", "1>", "&"))]
    if name in ("pytest", "py.test") or (INTERPRETERS.match(name) and args[:2] == ["-m", "pytest"]):
        paths = [t for t in targets if "/" in t or t.endswith(".py")]
        return bool(paths) and all(t.startswith("/tests") or t.rsplit("/", 1)[-1] in names for t in paths)
    if INTERPRETERS.match(name):
        if heredoc and (not targets or targets[0] == "-"):
            return True
        return bool(targets) and (targets[0].startswith("/tests/") or targets[0] in names)
    return head.startswith("/tests/")


def _sh_compare(shell: sh.Shell, rel: str, line: int, left: str, right: str, facts: _Facts) -> None:
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
    pattern = sh.grep_pattern(args)
    if pattern is None:
        facts.computed_cmp = True
        return
    files = [sh.unquote(a) for a in args[args.index(pattern) + 1 :] if not a.startswith("-")]
    if piped and (_runs_verifier_file(*piped, names, False) or piped[0] in ("pytest", "py.test")):
        return  # reads the verifier's own test report
    if files and all(f.startswith(("/logs/", "/tmp/", "$")) for f in files):
        return
    if pattern.startswith("'") or "$" not in pattern.strip("'\"").rstrip("$"):
        prog = piped is not None and sh.runs_agent(*piped)
        facts.literal_cmp.append((rel, line, [repr(sh.unquote(pattern).strip("^$"))], prog))
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
    shell = sh.Shell(source.text)
    first = source.text.split("\n", 1)[0]
    errexit = 1 if SHEBANG_E_RE.match(first) else 0
    reward_vars = {
        m.group(1) for _, c in shell.lines if (m := sh.SH_ASSIGN_RE.match(c.strip())) and REWARD_RE.search(c)
    }
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
        segments = sh.segments(code)
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
    head, args = sh.command_head(sh.split_words(segment))
    if not head:  # an assignment: its status is that of its command substitutions
        return any(_can_fail(inner) for inner in sh.substitutions(segment))
    name, plain = head.rsplit("/", 1)[-1], [sh.unquote(a) for a in args]
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
    if sh.SH_ASSIGN_RE.match(code) and "$(" not in code:
        return False
    if REWARD_RE.search(code) or any(re.search(rf"\$\{{?{v}\b", code) for v in reward_vars):
        return True
    return any(head in writers for _, head, _ in sh.commands(code))
