"""Pure text fixes of verifier scripts: each takes a file's text and returns the fixed text, or None
when its defect is not there (so a rule that does not apply changes nothing).

They are deliberately narrow: each matches one mechanical defect in its usual spellings and
leaves everything else byte for byte. The fresh audit after a repair is the judge; a fix that
guessed wrong is rejected there, never trusted.
"""

from __future__ import annotations

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
