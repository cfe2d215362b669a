"""Pure text fixes of verifier scripts: each takes a file's text and returns the fixed text, or None
when its defect is not there (so a rule that does not apply changes nothing).

They are deliberately narrow: each matches one mechanical defect in its usual spellings and
leaves everything else byte for byte. The fresh audit after a repair is the judge; a fix that
guessed wrong is rejected there, never trusted.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable

REWARD_NAME_RE = re.compile(r"/logs/verifier/reward\.(txt|json)\b")
CHECK_RE = re.compile(
    r"(?<![\w.-])(?:pytest|py\.test|python3?(?:\.\d+)?|node|npm|npx|bats|uvx?|ruby|perl|go\s+test|cargo\s+test)\b"
    r"|/tests/"
)
"""A line that runs the verifier's checks."""
STATUS_RE = re.compile(r"\$\?|\$\{\?\}")
ERREXIT_ON_RE = re.compile(r"^\s*set\s+(?:.*\s)?(?:-[a-zA-Z]*e[a-zA-Z]*|-o\s+errexit)(?:\s|$)")
ERREXIT_OFF_RE = re.compile(r"^\s*set\s+(?:.*\s)?(?:\+[a-zA-Z]*e[a-zA-Z]*|\+o\s+errexit)(?:\s|$)")
ZERO_REWARD_RE = re.compile(
    r"\b(?:echo|printf)\s+(?:-\w+\s+)?['\"]?(?:0(?:\.0+)?|\{[^}]*:\s*0(?:\.0+)?\s*\})['\"]?\s*>\s*['\"]?"
    r"/logs/verifier/reward\.(?:txt|json)"
)
TRAP_REWARD_RE = re.compile(r"^\s*trap\s+.*reward\.(?:txt|json).*\b(?:ERR|EXIT)\b")
COMPOUND_RE = re.compile(r"^\s*(?:if|elif|while|until|!)\s|\|\||&&")

MARKER = "# qaflow repair"
"""Starts every line a fix inserts, so people can see what was added (and fixes stay idempotent)."""


def split_comment(line: str) -> tuple[str, str]:
    """(code, comment) of one shell or Python line: the comment starts at an unquoted `#` that
    begins a word (so `$#` and `${#x}` stay code)."""
    quote = ""
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i], line[i:]
    return line, ""


def _code_lines(text: str) -> list[str]:
    return [split_comment(line)[0] for line in text.splitlines()]


LineFix = Callable[[str, int, list[str]], str]
"""(code of a line, its index, the code of every line) -> the fixed code."""


def _map_code(text: str, fix_line: LineFix) -> str | None:
    """Apply `fix_line(code, index, code_lines)` to the code part of every line; None when nothing changed."""
    lines = text.splitlines(keepends=True)
    codes = [split_comment(line.rstrip("\r\n"))[0] for line in lines]
    changed = False
    for i, line in enumerate(lines):
        body = line.rstrip("\r\n")
        ending = line[len(body) :]
        code, comment = split_comment(body)
        fixed = fix_line(code, i, codes)
        if fixed != code:
            lines[i] = fixed + comment + ending
            changed = True
    return "".join(lines) if changed else None


# --- the verifier leaves no reward when it fails --------------------------------------------


def reward_file_written(entry_text: str, helper_texts: list[str]) -> str:
    """Which reward file the verifier writes: the one test.sh's code names, else the one its helpers
    name; reward.txt when both or neither are named (reward.json would shadow a reward.txt)."""
    for texts in ([entry_text], helper_texts):
        names = {m for t in texts for code in _code_lines(t) for m in REWARD_NAME_RE.findall(code)}
        if names == {"json"}:
            return "reward.json"
        if names:
            return "reward.txt"
    return "reward.txt"


def writes_failing_reward_first(text: str) -> bool:
    """A 0 reward (or an ERR/EXIT trap writing one) comes before the first line that runs checks."""
    for code in _code_lines(text):
        if ZERO_REWARD_RE.search(code) or TRAP_REWARD_RE.search(code):
            return True
        if CHECK_RE.search(code):
            return False
    return False


def exits_before_reward(text: str) -> bool:
    """Under `set -e`, a bare check command (not guarded by if/||/&&) comes before the last reward
    write: when it fails, the script stops and no reward is written."""
    codes = _code_lines(text)
    writes = [i for i, c in enumerate(codes) if REWARD_NAME_RE.search(c) and not TRAP_REWARD_RE.search(c)]
    if not writes:
        return False
    errexit = False
    for code in codes[: writes[-1]]:
        if ERREXIT_OFF_RE.search(code):
            errexit = False
        elif ERREXIT_ON_RE.search(code):
            errexit = True
        elif errexit and CHECK_RE.search(code) and not COMPOUND_RE.search(code):
            return True
    return False


def failing_reward_line(reward_file: str) -> str:
    if reward_file == "reward.json":
        return "echo '{\"reward\": 0}' > /logs/verifier/reward.json"
    return "echo 0 > /logs/verifier/reward.txt"


def write_failing_reward_first(text: str, reward_file: str, *, evidence: bool = False) -> str | None:
    """Insert, right after the shebang, a line writing a failing reward, so a verifier that stops
    early (set -e, a crashing helper) still leaves one; the checks overwrite it on success.

    Applies when the audit saw a run without reward (`evidence`) or `exits_before_reward` shows
    the defect statically, and the script does not already write a failing reward first."""
    if writes_failing_reward_first(text) or not (evidence or exits_before_reward(text)):
        return None
    lines = text.splitlines(keepends=True)
    at = 1 if lines and lines[0].startswith("#!") else 0
    if at and not lines[0].endswith("\n"):
        lines[0] += "\n"
    added = [
        f"{MARKER}: write a failing reward first; the checks below overwrite it when they pass\n",
        "mkdir -p /logs/verifier\n",
        failing_reward_line(reward_file) + "\n",
    ]
    return "".join(lines[:at] + added + lines[at:])


# --- `|| true` swallowing the checks' exit status -------------------------------------------

_SWALLOW = r"\s*(?:\|\|\s*(?:true|:)|;\s*true)"
_IF_SWALLOW_RE = re.compile(rf"^(?P<head>\s*(?:el)?if\s+)(?P<cmd>.+?){_SWALLOW}(?P<tail>\s*;\s*then\b.*)$")
_TAIL_SWALLOW_RE = re.compile(rf"{_SWALLOW}\s*$")


def remove_swallowed_status(text: str) -> str | None:
    """Drop a `|| true` (`|| :`, `; true`) that hides the check command's exit status from the
    reward decision: inside `if CMD || true; then`, or after `CMD` when the next line reads `$?`."""

    def fix(code: str, i: int, codes: list[str]) -> str:
        m = _IF_SWALLOW_RE.match(code)
        if m and CHECK_RE.search(m["cmd"]):
            return m["head"] + m["cmd"] + m["tail"]
        if _TAIL_SWALLOW_RE.search(code) and CHECK_RE.search(code) and not COMPOUND_RE.search(code.split("||")[0]):
            following = next((c for c in codes[i + 1 :] if c.strip()), "")
            if STATUS_RE.search(following):
                return _TAIL_SWALLOW_RE.sub("", code)
        return code

    return _map_code(text, fix)


# --- `[ $? ]`: a test that is always true ----------------------------------------------------


def fix_always_true_status(text: str) -> str | None:
    """`[ $? ]`, `[[ $? ]]`, `test $?` and `[ -n "$?" ]` test a non-empty string, which is always
    true; make them `-eq 0`. Variables assigned from `$?` (`rc=$?; [ $rc ]`) count too."""
    names = sorted(set(re.findall(r"\b([A-Za-z_]\w*)=(?:\$\?|\$\{\?\})", text)))
    alts = [r"\$\?", r"\$\{\?\}"]
    for n in names:
        alts += [rf"\${re.escape(n)}\b", rf"\$\{{{re.escape(n)}\}}"]
    tok = rf"(?P<tok>\"?(?:{'|'.join(alts)})\"?)"
    patterns = [
        (re.compile(rf"\[\[\s+(?:-n\s+)?{tok}\s+\]\]"), "[[ {} -eq 0 ]]"),
        (re.compile(rf"(?<!\[)\[\s+(?:-n\s+)?{tok}\s+\](?!\])"), "[ {} -eq 0 ]"),
        (re.compile(rf"\btest\s+(?:-n\s+)?{tok}(?=\s*(?:;|&&|\|\||\)|$))"), "test {} -eq 0"),
    ]

    def fix(code: str, _i: int, _codes: list[str]) -> str:
        for rx, template in patterns:

            def fill(m: re.Match[str], t: str = template) -> str:
                return t.format(m["tok"])

            code = rx.sub(fill, code)
        return code

    return _map_code(text, fix)


# --- pytest's exit code 5 (no tests collected) taken as success -----------------------------

_V = r'"?\$\{?(?P<v>\?|[A-Za-z_]\w*)\}?"?'
_V2 = r'"?\$\{?(?P=v)\}?"?'
_OB, _CB = r"\[\[?\s*", r"\s*\]\]?"
_FIVE = r'"?5(?!\d)"?'
_ZERO = r'"?0(?!\d)"?'
_PY_V = r"(?P<v>[A-Za-z_][\w.]*(?:\(\))?)"
_TUPLE_05 = r"[\(\[\{]\s*(?:0\s*,\s*5|5\s*,\s*0)\s*,?\s*[\)\]\}]"
_OK = r"(?P<ok>[\w.]*ExitCode\.OK)"
_NONE = r"[\w.]*ExitCode\.NO_TESTS_COLLECTED"


def _exit5_patterns() -> list[tuple[re.Pattern[str], str]]:
    out: list[tuple[re.Pattern[str], str]] = []
    shell = ((r"(?:-eq|==?)", r"(?:\|\||-o)", r"\|\|"), (r"(?:-ne|!=)", r"(?:&&|-a)", r"&&"))
    for eq, join, outer in shell:
        out += [
            (
                re.compile(rf"(?P<keep>{_OB}{_V}\s+{eq}\s+{_ZERO}{_CB})\s*{outer}\s*{_OB}{_V2}\s+{eq}\s+{_FIVE}{_CB}"),
                "",
            ),
            (
                re.compile(rf"{_OB}{_V}\s+{eq}\s+{_FIVE}{_CB}\s*{outer}\s*(?P<keep>{_OB}{_V2}\s+{eq}\s+{_ZERO}{_CB})"),
                "",
            ),
            (re.compile(rf"(?P<keep>{_V}\s+{eq}\s+{_ZERO})\s*{join}\s*{_V2}\s+{eq}\s+{_FIVE}"), ""),
            (re.compile(rf"{_V}\s+{eq}\s+{_FIVE}\s*{join}\s*(?P<keep>{_V2}\s+{eq}\s+{_ZERO})"), ""),
        ]
    for eq, join in (("==", "or"), ("!=", "and")):
        out += [
            (re.compile(rf"(?P<keep>{_PY_V}\s*{eq}\s*0(?!\d))\s+{join}\s+(?P=v)\s*{eq}\s*5(?!\d)"), ""),
            (re.compile(rf"{_PY_V}\s*{eq}\s*5(?!\d)\s+{join}\s+(?P<keep>(?P=v)\s*{eq}\s*0(?!\d))"), ""),
        ]
    out += [
        (re.compile(rf"\bnot\s+in\s*{_TUPLE_05}"), "!= 0"),
        (re.compile(rf"\bin\s*{_TUPLE_05}"), "== 0"),
        (re.compile(rf"\bnot\s+in\s*[\(\[\{{]\s*{_OK}\s*,\s*{_NONE}\s*,?\s*[\)\]\}}]"), "!= {ok}"),
        (re.compile(rf"\bin\s*[\(\[\{{]\s*{_OK}\s*,\s*{_NONE}\s*,?\s*[\)\]\}}]"), "== {ok}"),
        (re.compile(rf"\bnot\s+in\s*[\(\[\{{]\s*{_NONE}\s*,\s*{_OK}\s*,?\s*[\)\]\}}]"), "!= {ok}"),
        (re.compile(rf"\bin\s*[\(\[\{{]\s*{_NONE}\s*,\s*{_OK}\s*,?\s*[\)\]\}}]"), "== {ok}"),
        (re.compile(r"^(?P<keep>\s*\(?\s*)(?:0\s*\|\s*5|5\s*\|\s*0)\s*\)"), "{keep}0)"),
    ]
    return out


_EXIT5 = _exit5_patterns()


def _exit5_sub(m: re.Match[str], template: str) -> str:
    if not template:
        return m["keep"]
    return template.format(**{k: v for k, v in m.groupdict().items() if v is not None})


def exit5_is_failure(text: str) -> str | None:
    """Make a success test that also accepts pytest's exit code 5 (no tests collected) accept
    exactly 0: `[ $rc -eq 0 ] || [ $rc -eq 5 ]`, `rc in (0, 5)`, `ExitCode.NO_TESTS_COLLECTED`,
    `case $? in 0|5)`, and the matching failure tests. Only in files that mention pytest."""
    if "pytest" not in text:
        return None

    def fix(code: str, _i: int, _codes: list[str]) -> str:
        for rx, template in _EXIT5:

            def fill(m: re.Match[str], t: str = template) -> str:
                return _exit5_sub(m, t)

            code = rx.sub(fill, code)
        return code

    return _map_code(text, fix)


# --- shared: heredoc bodies and quotes ---------------------------------------------------------

_HEREDOC_RE = re.compile(r"(?<!<)<<(?!<)(?P<strip>-?)[ \t]*(?P<q>['\"]?)(?P<word>[A-Za-z_][\w-]*)(?P=q)")


def heredoc_lines(text: str) -> set[int]:
    """Indexes of the lines that are heredoc bodies (their terminators included): data, not commands."""
    body: set[int] = set()
    pending: list[tuple[bool, str]] = []
    for i, line in enumerate(text.splitlines()):
        if pending:
            body.add(i)
            strip, word = pending[0]
            if (line.lstrip("\t") if strip else line) == word:
                pending.pop(0)
            continue
        code = split_comment(line)[0]
        pending += [
            (m["strip"] == "-", m["word"]) for m in _HEREDOC_RE.finditer(code) if not quoted_at(code, m.start())
        ]
    return body


def quoted_at(code: str, pos: int) -> bool:
    """Whether `code[pos]` lies inside single or double quotes."""
    quote = ""
    i = 0
    while i < pos:
        ch = code[i]
        if quote == "'":
            quote = "" if ch == "'" else quote
        elif ch == "\\":
            i += 1
        elif quote == '"':
            quote = "" if ch == '"' else quote
        elif ch in "'\"":
            quote = ch
        i += 1
    return bool(quote)


def _map_commands(text: str, fix_line: LineFix) -> str | None:
    """`_map_code` on every line but heredoc bodies."""
    skip = heredoc_lines(text)

    def fix(code: str, i: int, codes: list[str]) -> str:
        return code if i in skip else fix_line(code, i, codes)

    return _map_code(text, fix)


def _previous_code(codes: list[str], i: int) -> str:
    """The last non-blank code line before line i."""
    return next((c for c in reversed(codes[:i]) if c.strip()), "")


# --- pytest loading files the agent can write -------------------------------------------------

_PY_PYTEST_RE = re.compile(
    r"(?<![\w./${}-])(?P<py>(?:[\w./${}-]*/)?python(?:3(?:\.\d+)?)?)"
    r"(?P<opts>(?:[ \t]+-(?:[WX][ \t]*[^\s;&|)]+|[A-Za-z]+))*)"
    r"[ \t]+-m[ \t]*pytest(?![\w.-])"
)
_BARE_PYTEST_RE = re.compile(r"(?<![\w./${}-])(?:[\w./${}-]*/)?(?:pytest|py\.test)(?![\w.-])")
_ASSIGNS = r"(?P<assign>(?:[A-Za-z_]\w*=(?:'[^']*'|\"[^\"]*\"|\S*)[ \t]+)*)"
_COMMAND_START = r"(?:^|[;&|({!]|\b(?P<kw>then|do|else|if|elif|while|until|exec|time|command|env)\b)[ \t]*"
_AT_COMMAND_RE = re.compile(rf"{_COMMAND_START}{_ASSIGNS}$")
_TIMEOUT_RE = re.compile(
    rf"{_COMMAND_START}{_ASSIGNS}timeout(?:[ \t]+(?:-[ks][ \t]*(?!-)\S+|-\S+|[A-Z]+))*[ \t]+\d+(?:\.\d+)?[smhd]?[ \t]+$"
)
_RUNNER_RE = re.compile(rf"{_COMMAND_START}{_ASSIGNS}(?:uv|poetry|pipenv)[ \t]+run[ \t]+$")
_END_OF_COMMAND_RE = re.compile(r";|&&|\|\||\||\)|(?<![<>&])&(?![>&])")
SAFE_ENV = ("PYTHONNOUSERSITE=1", "PYTHONSAFEPATH=1")
"""For a pytest console script, which `-I` cannot reach: no user site, no script folder on sys.path."""


def _command_rest(code: str, i: int, codes: list[str]) -> str:
    """The rest of the command from `code` on (backslash continuation lines joined), up to its end."""
    rest = code
    j = i
    while rest.rstrip().endswith("\\") and j + 1 < len(codes):
        j += 1
        rest = rest.rstrip()[:-1] + " " + codes[j]
    return _END_OF_COMMAND_RE.split(rest, maxsplit=1)[0]


def _pytest_flags(rest: str, conftest: bool) -> str:
    added = ""
    if "no:cacheprovider" not in rest:
        added += " -p no:cacheprovider"
    if "--noconftest" not in rest and not (conftest and "--confcutdir" in rest):
        added += " --confcutdir=/tests" if conftest else " --noconftest"
    return added


def isolate_pytest(text: str, *, conftest: bool, isolate: bool = True) -> str | None:
    """Make each pytest run of a shell script unable to load files the agent wrote.

    `python -m pytest` (any python): `-I` on the interpreter (no working folder or user site on
    sys.path, PYTHON* variables ignored; left out when not `isolate`, e.g. the verifier needs its
    PYTHONPATH); a bare `pytest` console script at a command's start (or after `timeout N`):
    PYTHONNOUSERSITE=1 PYTHONSAFEPATH=1 in its environment. Both get `-p no:cacheprovider` and
    `--noconftest` (`--confcutdir=/tests` when the verifier ships a conftest.py: `conftest`) where
    they lack them. Pytest named elsewhere (`pip install pytest`, quoted text, heredocs) is left alone."""

    def fix(code: str, i: int, codes: list[str]) -> str:
        edits: list[tuple[int, int, str]] = []  # (start, end, replacement), applied right to left
        covered: list[tuple[int, int]] = []
        for m in _PY_PYTEST_RE.finditer(code):
            covered.append(m.span())
            if quoted_at(code, m.start()):
                continue
            opts = [w for w in m["opts"].split() if w.startswith("-") and not w.startswith(("-W", "-X"))]
            if isolate and not any("I" in w for w in opts):
                edits.append((m.end("py"), m.end("py"), " -I"))
            edits.append((m.end(), m.end(), _pytest_flags(_command_rest(code[m.end() :], i, codes), conftest)))
        for m in _BARE_PYTEST_RE.finditer(code):
            if any(a <= m.start() < b for a, b in covered) or quoted_at(code, m.start()):
                continue
            before = code[: m.start()]
            at, runner = _AT_COMMAND_RE.search(before), _RUNNER_RE.search(before)
            found = at or _TIMEOUT_RE.search(before) or runner
            if found is None:
                continue
            missing = " ".join(v for v in SAFE_ENV if v.split("=")[0] + "=" not in found["assign"])
            if missing and runner is None:
                plain = at is not None and at["kw"] not in ("exec", "command")  # where assignments may stand
                edits.append((m.start(), m.start(), f"{missing} " if plain else f"env {missing} "))
            edits.append((m.end(), m.end(), _pytest_flags(_command_rest(code[m.end() :], i, codes), conftest)))
        for start, end, new in sorted(edits, reverse=True):
            code = code[:start] + new + code[end:]
        return code

    return _map_commands(text, fix)


_COPY_FROM_TESTS_RE = re.compile(r"(?<![\w-])cp(?:[ \t]+-\w+)*[ \t]+['\"]?(?P<src>/tests/[^\s;&|'\"]+\.py)['\"]?[ \t]")
_TEST_ARG_RE = re.compile(r"(?<=[ \t])(?P<arg>[^\s;&|'\"-][^\s;&|'\"]*\.py)(?P<node>::[^\s;&|]*)?(?=\s|$)")


def pytest_from_tests(text: str) -> str | None:
    """Point each pytest run at the verifier's own copy of a test file the script copied out of /tests
    (`cp /tests/test_x.py /app/` then `pytest /app/test_x.py` runs `/tests/test_x.py`): pytest imports the
    `__init__.py` next to the tests it collects, which no flag turns off, so tests collected from a folder
    the agent can write run the agent's code. The working folder and everything else stay as they were."""
    copied: dict[str, str] = {}
    for m in _COPY_FROM_TESTS_RE.finditer(text):
        copied.setdefault(posixpath.basename(m["src"]), m["src"])
    if not copied:
        return None

    def fix(code: str, i: int, codes: list[str]) -> str:
        edits: list[tuple[int, int, str]] = []
        for m in [*_PY_PYTEST_RE.finditer(code), *_BARE_PYTEST_RE.finditer(code)]:
            if quoted_at(code, m.start()):
                continue
            end = m.end() + len(_END_OF_COMMAND_RE.split(code[m.end() :], maxsplit=1)[0])
            for arg in _TEST_ARG_RE.finditer(code, m.end(), end):
                source = copied.get(posixpath.basename(arg["arg"]))
                if source is not None and arg["arg"] != source:
                    edits.append((arg.start("arg"), arg.end("arg"), source))
        for start, end, new in sorted(set(edits), reverse=True):
            code = code[:start] + new + code[end:]
        return code

    return _map_commands(text, fix)


# --- the reward tail: 1 exactly when the checks exit 0 --------------------------------------------

_CHECK_CMD = r"(?P<cmd>(?:[^;|&`]|&&)+?)(?P<swallow>[ \t]*(?:\|\|[ \t]*(?:true|:)|;[ \t]*true))?"
_FULL_WRITE = (
    r"(?P<write>(?:echo|printf)[ \t]+(?:-n[ \t]+)?(?P<q>['\"]?)"
    r"(?P<val>1(?:\.0+)?|\{[ \t]*\"reward\"[ \t]*:[ \t]*1(?:\.0+)?[ \t]*\})(?P=q)"
    r"[ \t]*>[ \t]*['\"]?/logs/verifier/reward\.(?:txt|json)['\"]?)"
)
_CHECK_LINE_RE = re.compile(rf"^(?P<ind>[ \t]*){_CHECK_CMD}[ \t]*$")
_WRITE_LINE_RE = re.compile(rf"^[ \t]*{_FULL_WRITE}[ \t]*$")
_SAME_LINE_RE = re.compile(rf"^(?P<ind>[ \t]*){_CHECK_CMD}[ \t]*;[ \t]*{_FULL_WRITE}[ \t]*$")
NOT_CHECKS = frozenset(
    {"cd", "cp", "mv", "mkdir", "rm", "ln", "chmod", "chown", "echo", "printf", "export", "source", ".", "touch",
     "pip", "pip3", "apt-get", "apt", "set", "trap", "exit", "return", "true", ":", "local", "declare"}
)  # fmt: skip


def _simple_check(cmd: str) -> bool:
    """A plain command (or `&&` list of them) that runs the checks: not a compound, a pipeline, a reward
    write or a setup step, and its status is that of its last command."""
    parts = cmd.split("&&")
    last = parts[-1].split()
    return (
        bool(last)
        and all(p.split() for p in parts)
        and last[0] not in NOT_CHECKS
        and "=" not in last[0]
        and CHECK_RE.search(cmd) is not None
        and re.match(r"\s*(?:if|elif|while|until|!|fi|done|then|else|do|esac|[{}()])(?:\s|$)", cmd) is None
        and re.search(r"[;|`]|\$\(|(?<!&)&(?!&)", cmd) is None
        and REWARD_NAME_RE.search(cmd) is None
        and not cmd.rstrip().endswith("\\")
    )


def _errexit_at(codes: list[str], at: int) -> bool:
    errexit = False
    for code in codes[:at]:
        if ERREXIT_OFF_RE.search(code):
            errexit = False
        elif ERREXIT_ON_RE.search(code):
            errexit = True
    return errexit


def _zero_write(m: re.Match[str]) -> str:
    val = m["val"]
    zero = "0" if val[0] == "1" else re.sub(r":([ \t]*)1(?:\.0+)?", r":\g<1>0", val)
    start, end = m.start("val") - m.start("write"), m.end("val") - m.start("write")
    return m["write"][:start] + zero + m["write"][end:]


def reward_only_on_success(text: str) -> str | None:
    """`CHECKS || true` (or `CHECKS` alone, without `set -e`) followed by an unconditional
    `echo 1 > /logs/verifier/reward.txt` (on the next line, or after `;`) gives full reward whatever the
    checks did: make it `if CHECKS; then echo 1 > ...; else echo 0 > ...; fi`. Only where that write is
    the script's last reward write and the line before it is a plain check command; reward.json
    (`{"reward": 1}`) too."""
    lines = text.splitlines(keepends=True)
    codes = [split_comment(line.rstrip("\r\n"))[0] for line in lines]
    skip = heredoc_lines(text)
    writes = [
        i for i, c in enumerate(codes) if i not in skip and REWARD_NAME_RE.search(c) and not TRAP_REWARD_RE.search(c)
    ]
    if not writes:
        return None
    j = writes[-1]
    same = _SAME_LINE_RE.match(codes[j])
    if same is not None and _simple_check(same["cmd"]) and not (j and lines[j - 1].rstrip("\r\n").endswith("\\")):
        check, write, drop = same, same, None
    else:
        write_m = _WRITE_LINE_RE.match(codes[j])
        i = next((k for k in range(j - 1, -1, -1) if codes[k].strip()), None)
        if write_m is None or i is None or i in skip:
            return None
        check_m = _CHECK_LINE_RE.match(codes[i])
        if check_m is None or not _simple_check(check_m["cmd"]) or (i and codes[i - 1].rstrip().endswith("\\")):
            return None
        check, write, drop = check_m, write_m, i
    if not check["swallow"] and _errexit_at(codes, j):
        return None  # under `set -e` a failing check stops the script: the write is not unconditional
    ending = next((line[len(line.rstrip("\r\n")) :] for line in lines if line.endswith("\n")), "\n")
    ind = check["ind"]
    body = lines[j].rstrip("\r\n")
    comments = [split_comment(line.rstrip("\r\n"))[1] for line in (lines[j], lines[drop] if drop is not None else "")]
    if all(comments):
        return None  # two comments for one `if` line: one would be lost
    comment = comments[0] or comments[1]
    block = [
        f"{ind}if {check['cmd'].strip()}; then" + (f"  {comment}" if comment else ""),
        f"{ind}  {write['write']}",
        f"{ind}else",
        f"{ind}  {_zero_write(write)}",
        f"{ind}fi",
    ]
    new = ending.join(block) + lines[j][len(body) :]
    return "".join(new if k == j else line for k, line in enumerate(lines) if k != drop)


# --- `[ $? -ne 1 ]`: every exit status but 1 taken as success ----------------------------------

_ONE = r"(?P<q>\"?)1(?P=q)(?!\d)"


def status_not_one_is_failure(text: str) -> str | None:
    """`[ $? -ne 1 ]`, `[ "$rc" != 1 ]`, `[[ $rc != 1 ]]`, `test $? -ne 1` and `(( $? != 1 ))` treat every
    exit status but 1 (pytest's 2-5: interrupted, internal error, usage error, no tests) as success:
    make them `-eq 0` / `= 0` / `== 0`. Only for the status of a check command (`$?` right after it,
    or a variable assigned from that)."""
    lines = text.splitlines()
    codes = [split_comment(line)[0] for line in lines]

    def source_is_check(code: str, pos: int, i: int) -> bool:
        segments = re.split(r";|&&|\|\|", code[:pos])
        source = segments[-2] if len(segments) > 1 else _previous_code(codes, i)
        return _simple_check(source.strip())

    names: set[str] = set()
    for i, code in enumerate(codes):
        for m in re.finditer(r"\b([A-Za-z_]\w*)=(?:\$\?|\$\{\?\})", code):
            if source_is_check(code, m.start(), i):
                names.add(m[1])
    alts = [r"\$\?", r"\$\{\?\}"] + [a for n in sorted(names) for a in (rf"\${n}\b", rf"\$\{{{n}\}}")]
    bare = [rf"\b{n}\b" for n in sorted(names)]
    tok = '(?P<tok>"?(?:' + "|".join(alts) + ')"?)'
    arith = "(?P<tok>" + "|".join(alts + bare) + ")"
    ne, end = rf"[ \t]+(?P<op>-ne|!=)[ \t]+{_ONE}", r"(?=[ \t]*(?:;|&&|\|\||\)|$))"
    patterns = [
        (re.compile(rf"(?P<head>\[\[[ \t]+){tok}{ne}(?P<tail>[ \t]+\]\])"), "=="),
        (re.compile(rf"(?P<head>(?<!\[)\[[ \t]+){tok}{ne}(?P<tail>[ \t]+\](?!\]))"), "="),
        (re.compile(rf"(?P<head>\btest[ \t]+){tok}{ne}(?P<tail>){end}"), "="),
        (re.compile(rf"(?P<head>\(\([ \t]*){arith}[ \t]*(?P<op>!=)[ \t]*(?P<q>)1(?!\d)(?P<tail>[ \t]*\)\))"), "=="),
    ]

    def fix(code: str, i: int, _codes: list[str]) -> str:
        original = code
        for rx, equal in patterns:

            def fill(m: re.Match[str], equal: str = equal) -> str:
                if "?" in m["tok"] and not source_is_check(original, m.start(), i):
                    return m[0]
                op = "-eq" if m["op"] == "-ne" else equal
                return f"{m['head']}{m['tok']} {op} {m['q']}0{m['q']}{m['tail']}"

            code = rx.sub(fill, code)
        return code

    return _map_commands(text, fix)


# --- shells that read start-up files ----------------------------------------------------------

_SHELL_OPTS_RE = re.compile(
    rf"{_COMMAND_START}{_ASSIGNS}(?P<shell>(?:[\w./-]*/)?(?:bash|sh|dash))(?P<opts>(?:[ \t]+(?:--login|-[A-Za-z]+))+)"
    r"(?=[ \t]|$)"
)


def _plain_opts(opts: str) -> str:
    words = []
    for word in opts.split():
        if word == "--login":
            continue
        if not word.startswith("--"):
            word = "-" + word[1:].replace("l", "").replace("i", "")
            if word == "-":
                continue
        words.append(word)
    return "".join(f" {w}" for w in words)


def no_startup_shell(text: str) -> str | None:
    """Each `bash`/`sh` the script starts as a login or interactive shell (`-l`, `--login`, `-i`, in any short
    option cluster: `bash -lc`) started without it, so it reads no start-up file the agent can write."""

    def fix(code: str, _i: int, _codes: list[str]) -> str:
        def sub(m: re.Match[str]) -> str:
            if quoted_at(code, m.start("shell")):
                return m.group(0)
            return m.group(0)[: m.start("opts") - m.start()] + _plain_opts(m["opts"])

        return _SHELL_OPTS_RE.sub(sub, code)

    return _map_commands(text, fix)
