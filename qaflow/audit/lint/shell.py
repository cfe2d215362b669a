"""Reading shell for the verifier lint: a small line parser (comments, continuations, heredocs), the
commands of a line with their words, test clauses, comparisons and grep patterns, and `Shell`, which
tells what a script's variables hold (see KINDS)."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator

from qaflow.audit.lint.kinds import INTERPRETERS, KINDS, MODULES_OF_TESTS

HEREDOC_RE = re.compile(r"(?<!<)<<-?\s*(['\"]?)([A-Za-z_][\w.-]*)\1")
WRAPPERS = frozenset({"timeout", "env", "sudo", "exec", "command", "nice", "nohup", "stdbuf", "xvfb-run", "time"})
KEYWORDS = frozenset({"if", "then", "else", "elif", "do", "while", "until", "!", "{", "time"})
ASSIGN_RE = re.compile(r"^[A-Za-z_]\w*(\[[^]]*\])?\+?=")
SH_ASSIGN_RE = re.compile(r"^(?:(?:export|local|readonly|declare|typeset)(?:\s+-\w+)*\s+)?([A-Za-z_]\w*)=(.*)$")
BINARY_OPS = frozenset({"=", "==", "!=", "-eq", "-ne", "-lt", "-le", "-gt", "-ge", "<", ">", "=~"})
SH_STATUS_NAME = re.compile(r"(?i)(^|_)(rc|ret|status|exit_?code|code|returncode)$")


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


def logical_lines(text: str) -> tuple[list[tuple[int, str]], list[tuple[int, str, str]]]:
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


def segments(code: str) -> list[tuple[str, str]]:
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


def substitutions(code: str) -> list[str]:
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


def split_words(command: str) -> list[str]:
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


def unquote(word: str) -> str:
    try:
        return " ".join(shlex.split(word))
    except ValueError:
        return word.strip("'\"")


def command_head(words: list[str]) -> tuple[str, list[str]]:
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
            return unquote(word), words[i + 1 :]
    return "", []


def commands(code: str) -> Iterator[tuple[str, str, list[str]]]:
    """(operator before, command word, arguments) of every command of a line, those in substitutions
    and subshells included."""
    for op, segment in segments(code):
        head, args = command_head(split_words(segment))
        if head.startswith("(") and not head.startswith("(("):
            yield from commands(head[1:-1] if head.endswith(")") else head[1:])
            continue
        yield op, head, args
        for inner in substitutions(segment):
            yield from commands(inner)


def is_test(head: str) -> bool:
    return head in ("[", "test") or head.startswith("[[")


def test_clauses(head: str, args: list[str]) -> list[list[str]]:
    """The clauses of a `[`, `[[` or `test` command: [op, arg] or [left, op, right]."""
    if head.startswith("[["):
        inner = head[2:].rstrip()
        args = split_words(inner[:-2] if inner.endswith("]]") else inner) + args
    clauses: list[list[str]] = [[]]
    for word in args:
        if word in ("-a", "-o", "&&", "||", "!", "(", ")"):
            clauses.append([])
        elif word not in ("]", "]]"):
            clauses[-1].append(word)
    return [c for c in clauses if c]


def comparisons(head: str, args: list[str]) -> list[tuple[str, str]]:
    """(left, right) of the binary comparisons of a test or arithmetic command."""
    if is_test(head):
        return [(c[0], c[2]) for c in test_clauses(head, args) if len(c) == 3 and c[1] in BINARY_OPS]
    if head.startswith("(("):
        parts = re.split(r"(\$\([^()]*\)|`[^`]*`)", " ".join([head, *args]).strip("() "))
        inner = "".join(  # bare names are variables here (outside command substitutions)
            part if i % 2 else re.sub(r"(?<![\w$#{])([A-Za-z_]\w*)", r"$\1", part) for i, part in enumerate(parts)
        )
        sides = re.split(r"<=|>=|==|!=|<|>", inner)
        return [(sides[0], sides[1])] if len(sides) == 2 else []
    return []


def grep_pattern(args: list[str]) -> str | None:
    """The pattern of a grep command; None when it reads its patterns from a file."""
    for i, word in enumerate(args):
        if word in ("-e", "--regexp") and i + 1 < len(args):
            return args[i + 1]
        if word in ("-f", "--file"):
            return None
        if not word.startswith("-") or word == "-":
            return word
    return None


def time_now(text: str) -> str | None:
    """The first use of the time now in `text`: `date` that parses no given date, or $EPOCHSECONDS."""
    for match in re.finditer(r"\$\(\s*date\b([^)]*)\)|`\s*date\b([^`]*)`|\$\{?EPOCH(?:SECONDS|REALTIME)\b\}?", text):
        args = match.group(1) or match.group(2) or ""
        if not re.search(r"(^|\s)(-[a-zA-Z]*[drf]\b|--date|--reference|--file)", args):
            return match.group(0)
    return None


def runs_agent(head: str, args: list[str]) -> bool:
    """A command running a program of the agent: an interpreter on a file or module outside /tests, or an
    executable path outside /tests and the system folders."""
    name = head.rsplit("/", 1)[-1]
    if INTERPRETERS.match(name):
        if args[:1] == ["-m"]:
            return len(args) > 1 and args[1] not in MODULES_OF_TESTS
        targets = [unquote(a) for a in args if not a.startswith(("-", ">", "<", "2>"))]
        return "-c" not in args[:1] and bool(targets) and "/" in targets[0] and not targets[0].startswith("/tests")
    return "/" in head and not head.startswith(("/tests", "/usr/", "/bin/", "/sbin/", "/opt/", "$"))


class Shell:
    """A parsed shell script: logical lines, heredocs, and what its variables hold."""

    def __init__(self, text: str):
        self.lines, self.heredocs = logical_lines(text)
        assigned: dict[str, list[str]] = {}
        for _, code in self.lines:
            for _, segment in segments(code):
                if SH_ASSIGN_RE.match(segment):
                    for word in split_words(segment):
                        if m := re.match(r"([A-Za-z_]\w*)=(.*)$", word, re.DOTALL):
                            assigned.setdefault(m.group(1), []).append(m.group(2))
                elif m := re.match(r"(?:while\s+)?read\b(.*)", segment):
                    for name in re.findall(r"(?<!\S)([A-Za-z_]\w*)", m.group(1)):
                        assigned.setdefault(name, []).append("$(read)")
                elif m := re.match(r"for\s+([A-Za-z_]\w*)\s", segment):
                    assigned.setdefault(m.group(1), []).append("${loop}")
        self.constants = {
            n: [unquote(v) for v in vs] for n, vs in assigned.items() if not any("$" in v or "`" in v for v in vs)
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
        if time_now(text) or "now" in refs:
            flat = re.sub(r"\$\((?!\()[^()]*\)|`[^`]*`", "X", text)
            return "dur" if re.search(r"[\w)}]\s*-\s*[\w${(]", flat) else "now"
        if re.search(r"\$\{?SECONDS\b", text) or "dur" in refs:
            return "dur"
        if "prog" in refs or any(runs_agent(h, a) for s in substitutions(text) for _, h, a in commands(s)):
            return "prog"
        if "$(" in text or "`" in text or "out" in refs:
            return "out"
        return None

    def operand(self, word: str) -> tuple[str | None, list[str]]:
        """("literal", its values) for a literal side of a comparison (or variables holding only literals),
        else (its kind, [])."""
        if word.startswith("'") or not re.search(r"[$`]", word):
            return "literal", [unquote(word)]
        names = re.findall(r"\$\{?([A-Za-z_]\w*)\}?", word)
        bare = re.sub(r"\$\{?[A-Za-z_]\w*\}?", "", unquote(word)).strip()
        if names and not bare and "$(" not in word and "`" not in word and all(n in self.constants for n in names):
            return "literal", [v for n in names for v in self.constants[n]]
        return self.kind(word), []
