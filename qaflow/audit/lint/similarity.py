"""Helpers of the lint probe: binary detection, normalisation, near-duplicate similarity, shell heredoc
bodies, the expected values a verifier compares against, and the sources of Dockerfile COPY lines."""

from __future__ import annotations

import ast
import fnmatch
import json
import posixpath
import re
import shlex
from difflib import SequenceMatcher
from pathlib import Path

_CODE_SUFFIX = re.compile(
    r"\.(py|sh|bash|zsh|bat|cmd|ps1|m?js|ts|rb|go|rs|java|kt|scala|c|cc|cpp|hp?p?|pl|php|lua|r|jl|swift|cs)"
)
_INTERPRETERS = {"python": ".py", "python3": ".py", "bash": ".sh", "sh": ".sh", "node": ".js", "perl": ".pl"}
_TEST_NAME = re.compile(
    r"^(tests?[_.-].*|.*_tests?\.\w+|conftest\.py|(check|verify|grade|grader|judge)\w*\.\w+)$", re.I
)
_TEST_MARKERS = re.compile(r"\bdef test_|^\s*assert\b|\bimport (pytest|unittest)\b|@pytest\.", re.MULTILINE)
_COMMENT = re.compile(r"^(#|//|--|;|rem\b|::)", re.IGNORECASE)
_HEREDOC = re.compile(r"<<-?\s*(['\"]?)([A-Za-z_][\w.-]*)\1")
_EXPECTED_NAME = re.compile(r"expect|answer|want|gold|truth|correct|reference|solution", re.IGNORECASE)


def normalise_lines(text: str, *, drop_comments: bool = False) -> list[str]:
    """Lines with trailing whitespace removed and inner runs collapsed (indentation kept), blanks dropped."""
    lines: list[str] = []
    for raw in text.replace("\r\n", "\n").split("\n"):
        body = raw.rstrip()
        stripped = body.lstrip()
        if not stripped or (drop_comments and _COMMENT.match(stripped)):
            continue
        indent = body[: len(body) - len(stripped)].replace("\t", "    ")
        lines.append(indent + " ".join(stripped.split()))
    return lines


def similarity(a: str | list[str], b: str | list[str], floor: float = 0.0) -> float:
    """Similarity in [0, 1] of two texts (or their `normalise_lines`): matching lines count in full,
    replaced line blocks by their character-level matches. Below `floor` it may return an upper bound."""
    la = normalise_lines(a) if isinstance(a, str) else a
    lb = normalise_lines(b) if isinstance(b, str) else b
    size_a, size_b = sum(len(x) + 1 for x in la), sum(len(x) + 1 for x in lb)
    if not size_a or not size_b:
        return 1.0 if size_a == size_b else 0.0
    bound = 2 * min(size_a, size_b) / (size_a + size_b)
    if bound < floor:
        return bound
    matched = 0
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, la, lb, autojunk=False).get_opcodes():
        if tag == "equal":
            matched += sum(len(x) + 1 for x in la[i1:i2])
        elif tag == "replace":
            block_a, block_b = "\n".join(la[i1:i2]), "\n".join(lb[j1:j2])
            if len(block_a) + len(block_b) <= 8000:
                inner = SequenceMatcher(None, block_a, block_b, autojunk=False)
                matched += sum(m.size for m in inner.get_matching_blocks())
    return min(1.0, 2 * matched / (size_a + size_b))


def heredocs(text: str) -> list[tuple[int, str, str]]:
    """Bodies of shell heredocs as (line number, suffix the body is written as or run by, body)."""
    found: list[tuple[int, str, str]] = []
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        match = _HEREDOC.search(lines[i])
        if not match:
            i += 1
            continue
        delimiter, start = match.group(2), i
        body: list[str] = []
        i += 1
        while i < len(lines) and lines[i].strip() != delimiter:
            body.append(lines[i])
            i += 1
        found.append((start + 1, _heredoc_suffix(lines[start]), "\n".join(body) + "\n"))
        i += 1
    return found


def _heredoc_suffix(command: str) -> str:
    for word in re.findall(r"[\w./-]+", _HEREDOC.sub(" ", command)):
        name = word.rsplit("/", 1)[-1]
        if name in _INTERPRETERS:
            return _INTERPRETERS[name]
        suffix = "." + name.rsplit(".", 1)[-1].lower() if "." in name else ""
        if _CODE_SUFFIX.fullmatch(suffix):
            return suffix
    return ""


def is_code(suffix: str) -> bool:
    return bool(_CODE_SUFFIX.fullmatch(suffix))


def is_test_code(name: str, suffix: str, text: str) -> bool:
    """Verifier test logic: a test- or check-named script, or code with test functions or asserts."""
    return is_code(suffix) and (bool(_TEST_NAME.match(name)) or bool(_TEST_MARKERS.search(text)))


# --- expected values -------------------------------------------------------------------------


def expected_values(text: str, suffix: str) -> set[str | int | float]:
    """Constants a verifier compares results with: operands of comparisons and assert* calls,
    values assigned to EXPECTED-like names; shell `= "..."` tests and grep patterns."""
    if suffix == ".py":
        try:
            return _python_values(ast.parse(text))
        except (SyntaxError, ValueError, RecursionError):
            pass
    found: set[str | int | float] = set()
    for pattern in (
        r"(?:==|!=|\s=)\s*([\"'])(.+?)\1",
        r"\bgrep\s+(?:-\w+\s+)*([\"'])(.+?)\1",
        r"\b\w*(?:expect|answer|want|gold)\w*=([\"'])(.+?)\1",
    ):
        found.update(m.group(2) for m in re.finditer(pattern, text, re.IGNORECASE))
    return found


def _python_values(tree: ast.AST) -> set[str | int | float]:
    found: set[str | int | float] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for operand in (node.left, *node.comparators):
                found.update(_constants(operand))
        elif (
            isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr.startswith("assert")
        ):
            for arg in node.args:
                found.update(_constants(arg))
        elif isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and _EXPECTED_NAME.search(t.id) for t in targets):
                found.update(_constants(node.value))
    return found


def _constants(node: ast.AST) -> set[str | int | float]:
    """Constants in an expression, skipping dict keys (field names, not values) and f-strings."""
    found: set[str | int | float] = set()
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, ast.Constant):
            if isinstance(current.value, str | int | float) and not isinstance(current.value, bool):
                found.add(current.value)
        elif isinstance(current, ast.Dict):
            stack.extend(v for v in current.values if v is not None)
        elif not isinstance(current, ast.JoinedStr):
            stack.extend(ast.iter_child_nodes(current))
    return found


def looks_like_answer(value: str, min_chars: int = 12) -> bool:
    """A computed result rather than a format: a number with 5 significant digits (4 with a fraction),
    or a string of `min_chars` or more, digits making 30% of it, that is not a file name, path or URL."""
    if re.fullmatch(r"-?\d+(\.\d+)?", value):
        significant = len(value.lstrip("-").replace(".", "").strip("0"))
        return significant >= (4 if "." in value else 5)
    digits = sum(c.isdigit() for c in value)
    path = value.startswith(("/", "~", "./")) or "://" in value or re.fullmatch(r"[\w.-]+\.[A-Za-z]\w{0,5}", value)
    return len(value) >= min_chars and digits >= 0.3 * len(value) and not path


# --- Dockerfile COPY sources ----------------------------------------------------------------


def copy_words(line: str) -> list[str]:
    """COPY/ADD arguments without flags (sources then destination); [] for other lines and --from copies."""
    parts = line.split(None, 1)
    if len(parts) < 2 or parts[0].upper() not in ("COPY", "ADD") or "--from" in parts[1]:
        return []
    args = parts[1].strip()
    try:
        words = json.loads(args) if args.startswith("[") else shlex.split(args)
    except (ValueError, json.JSONDecodeError):
        words = args.split()
    return [str(w) for w in words if not str(w).startswith("--")]


def in_source(rel: str, source: str) -> bool:
    pattern = posixpath.normpath(source.lstrip("/"))
    if pattern in (".", ""):
        return True
    parts = rel.split("/")
    return any(fnmatch.fnmatchcase("/".join(parts[:i]), pattern) for i in range(1, len(parts) + 1))


def dockerignore_patterns(path: Path) -> list[str]:
    if not path.is_file():
        return []
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    return [ln.strip() for ln in lines if ln.strip() and not ln.strip().startswith("#")]


def dockerignored(rel: str, patterns: list[str]) -> bool:
    result = False
    for pattern in patterns:
        negate = pattern.startswith("!")
        if in_source(rel, pattern.lstrip("!").replace("**/", "")) or in_source(rel, pattern.lstrip("!")):
            result = not negate
    return result
