"""One-change mutants of C-family code the reference solution wrote (C, C++, JavaScript/TypeScript, Java, Go,
Rust, C#), read as tokens, not parsed: no parser of these languages is at hand, and a mutant that no longer
compiles only costs a trial (the verifier rejects it, so it is never a survivor).

Changes, each in one place outside string and character literals, comments and preprocessor lines: a
comparison swapped (`<` and `<=`, `>` and `>=`, `==` and `!=`, `===` and `!==`), `&&` and `||`, a binary
`+` and `-`, an integer literal moved by one, `true` and `false`. Lines that open a loop (`for`, `while`,
`do`) are left alone (a change there can make it endless); so are `<`/`>` that read as template or generic
brackets and the stream and shift operators. A bounded, deterministic sample per file: one of each kind first,
then the rest in source order.

Which of these change behaviour cannot be told from the text: `qaflow.audit.mutants.skipped_tests` counts a surviving
mutant only where the task's own disabled tests, enabled, reject it and pass the reference solution.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from qaflow.audit.mutants.code import MAX_PER_FILE, CodeMutant, TextEdit, every_kind_first, mutant_of

SUFFIXES = frozenset(
    {".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".hh", ".js", ".mjs", ".cjs", ".ts", ".java", ".go", ".rs", ".cs"}
)
_TOKEN = re.compile(
    r"""(?P<skip>//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'|`(?:\\.|[^`\\])*`)"""
    r"""|(?P<num>\b\d+\b(?![.\w]))"""
    r"""|(?P<bool>\b(?:true|false)\b)"""
    r"""|(?P<op>===|!==|==|!=|<=|>=|&&|\|\||<<=?|>>>?=?|->|=>|\+\+|--|\+=|-=|[<>+-])""",
    re.DOTALL,
)
_SWAP = {"<": "<=", "<=": "<", ">": ">=", ">=": ">", "==": "!=", "!=": "==", "===": "!==", "!==": "===",
         "&&": "||", "||": "&&", "+": "-", "-": "+"}  # fmt: skip
_KIND = {"<": "comparison", "<=": "comparison", ">": "comparison", ">=": "comparison", "==": "comparison",
         "!=": "comparison", "===": "comparison", "!==": "comparison", "&&": "logic", "||": "logic",
         "+": "arithmetic", "-": "arithmetic"}  # fmt: skip
_LOOP = re.compile(r"^\s*(?:}\s*)?(?:for|while|do)\b|\bwhile\s*\(")
_OPERAND_END = re.compile(r"[\w)\]]\s*$")
_GENERIC = re.compile(r"^\s*[\w:,\s*&<>\[\]]*>")


def brace_mutants(path: str, source: str, *, limit: int = MAX_PER_FILE) -> list[CodeMutant]:
    """Up to `limit` one-change mutants of the C-family file `source` at `path` (module docstring)."""
    out: list[CodeMutant] = []
    for edit in every_kind_first(list(_edits(source)))[:limit]:
        mutated = source[: edit.start] + edit.text + source[edit.end :]
        out.append(mutant_of(path, source, mutated, edit.operator, edit.line))
    return out


def _edits(source: str) -> Iterator[TextEdit]:
    lines = source.splitlines(keepends=True)
    starts = [0]
    for text_line in lines:
        starts.append(starts[-1] + len(text_line))

    def line_of(offset: int) -> int:
        lo, hi = 0, len(starts) - 1
        while lo < hi - 1:
            mid = (lo + hi) // 2
            if starts[mid] <= offset:
                lo = mid
            else:
                hi = mid
        return lo + 1

    for m in _TOKEN.finditer(source):
        if m.lastgroup == "skip":
            continue
        start, end = m.span()
        line = line_of(start)
        text = lines[line - 1] if line - 1 < len(lines) else ""
        if text.lstrip().startswith(("#", "@", "import ", "package ", "use ", "using ", "template")):
            continue
        if _LOOP.search(text):
            continue
        token = m.group()
        if m.lastgroup == "num":
            yield TextEdit("constant", line, start, end, str(int(token) + 1))
        elif m.lastgroup == "bool":
            yield TextEdit("constant", line, start, end, "false" if token == "true" else "true")
        elif token in _SWAP:
            before = source[starts[line - 1] : start]
            if token in ("+", "-") and not _OPERAND_END.search(before):
                continue  # unary sign, not a binary operator
            if token in ("<", ">") and _looks_generic(token, source, start, end, before):
                continue
            yield TextEdit(_KIND[token], line, start, end, _SWAP[token])


_GENERIC_BEFORE = re.compile(
    r"\b[A-Z]\w*\s*$|\b(?:vector|map|set|array|pair|tuple|optional|unique_ptr|shared_ptr|function|Vec|Option|"
    r"Result|Box|HashMap|HashSet|static_cast|dynamic_cast|reinterpret_cast|const_cast)\s*$"
)


def _looks_generic(token: str, source: str, start: int, end: int, before: str) -> bool:
    """`vector<int>`, `Map<String, List<Integer>>`, `Vec<u8>`, `template <class T>`: brackets, not comparisons."""
    if token == "<":
        return bool(_GENERIC_BEFORE.search(before)) or bool(_GENERIC.match(source[end : end + 60]))
    return bool(re.search(r"<[\w:,\s*&<\[\]]*$", before))
