"""One-change mutants of Python code the reference solution wrote (mutation testing of the verifier).

Each mutant changes one place of the oracle's source, in the text (a one-line diff, the rest of the file
byte-identical): a comparison operator swapped (`<` and `<=`, `>` and `>=`, `==` and `!=`), an
arithmetic operator swapped (`+` and `-`, `*` and `//`), an integer constant moved by one, a constant
index moved (`x[0]` to `x[1]`) or an index offset negated (`l[i-1]` to `l[i+1]`), a condition negated,
a statement removed, a function that returns its first argument at once; nothing inside a `while`
loop (a change there can make it endless). A bounded, deterministic sample per file: every operator
kind first, then further places in source order.

Which mutants are equivalent (no behaviour change) cannot be told from the text; `qaflow.audit.runner`
reports a surviving mutant only where running it beside the oracle's code on inputs taken from the
tests shows a different result (`qaflow.audit.mutants.differential`).
"""

from __future__ import annotations

import ast
import difflib
from collections.abc import Callable, Iterator
from dataclasses import dataclass

MAX_PER_FILE = 8
_CMP_SWAP = {ast.Lt: "<=", ast.LtE: "<", ast.Gt: ">=", ast.GtE: ">", ast.Eq: "!=", ast.NotEq: "=="}
_CMP_TEXT = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!="}
_BIN_SWAP = {ast.Add: ("+", "-"), ast.Sub: ("-", "+"), ast.Mult: ("*", "//"), ast.FloorDiv: ("//", "*")}


@dataclass(frozen=True)
class CodeMutant:
    path: str
    """The container path of the file."""
    operator: str
    """comparison, arithmetic, constant, index, negate, remove, return-input."""
    line: int
    source: str
    """The whole mutated file."""
    diff: str

    @property
    def name(self) -> str:
        return f"code:{self.operator}:{self.path.lstrip('/')}:{self.line}"


@dataclass(frozen=True)
class TextEdit:
    """One change at `start:end` of a source text (offsets in characters), on `line`."""

    operator: str
    line: int
    start: int
    """Offsets into the source text."""
    end: int
    text: str


def code_mutants(path: str, source: str, *, limit: int = MAX_PER_FILE) -> list[CodeMutant]:
    """Up to `limit` one-change mutants of `source` (a Python file at `path`); none when it does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    offsets = _line_offsets(source)
    # a change inside a `while` loop can make it endless: each would cost a whole verifier timeout
    looping = {
        n for w in ast.walk(tree) if isinstance(w, ast.While) for n in range(w.lineno, (w.end_lineno or w.lineno) + 1)
    }
    edits = [e for e in _edits(tree, source, offsets) if e.line not in looping]
    out: list[CodeMutant] = []
    seen: set[str] = {source}
    for edit in every_kind_first(edits):
        if len(out) >= limit:
            break
        mutated = source[: edit.start] + edit.text + source[edit.end :]
        if mutated in seen or not _parses(mutated) or _same_tree(source, mutated):
            continue
        seen.add(mutated)
        out.append(mutant_of(path, source, mutated, edit.operator, edit.line))
    return out


def every_kind_first(edits: list[TextEdit]) -> list[TextEdit]:
    """One edit of each operator kind first, then the rest round-robin: a small sample still tries every kind."""
    by_kind: dict[str, list[TextEdit]] = {}
    for edit in edits:
        by_kind.setdefault(edit.operator, []).append(edit)
    order: list[TextEdit] = []
    while any(by_kind.values()):
        for kind in list(by_kind):
            if by_kind[kind]:
                order.append(by_kind[kind].pop(0))
    return order


def mutant_of(path: str, source: str, mutated: str, operator: str, line: int) -> CodeMutant:
    """The mutant of `path` whose text is `mutated`, with its one-hunk diff."""
    diff = "".join(
        difflib.unified_diff(
            source.splitlines(keepends=True), mutated.splitlines(keepends=True), path, path + " (mutant)", n=1
        )
    )
    return CodeMutant(path=path, operator=operator, line=line, source=mutated, diff=diff)


def _line_offsets(source: str) -> list[int]:
    offsets, total = [0], 0
    for line in source.splitlines(keepends=True):
        total += len(line.encode("utf-8"))
        offsets.append(total)
    return offsets


def _pos(offsets: list[int], source_bytes: bytes, line: int, col: int) -> int:
    """A character offset into the source from ast's (line, utf-8 byte column)."""
    byte = offsets[line - 1] + col
    return len(source_bytes[:byte].decode("utf-8", "replace"))


def _edits(tree: ast.AST, source: str, offsets: list[int]) -> Iterator[TextEdit]:
    data = source.encode("utf-8")

    def span(node: ast.AST) -> tuple[int, int]:
        return (
            _pos(offsets, data, node.lineno, node.col_offset),  # type: ignore[attr-defined]
            _pos(offsets, data, node.end_lineno, node.end_col_offset),  # type: ignore[attr-defined]
        )

    for node in ast.walk(tree):
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _CMP_SWAP:
            gap_start, gap_end = span(node.left)[1], span(node.comparators[0])[0]
            gap = source[gap_start:gap_end]
            op = _CMP_TEXT[type(node.ops[0])]
            at = gap.find(op)
            if at >= 0:
                new = gap[:at] + _CMP_SWAP[type(node.ops[0])] + gap[at + len(op) :]
                yield TextEdit("comparison", node.lineno, gap_start, gap_end, new)
        elif isinstance(node, ast.BinOp) and type(node.op) in _BIN_SWAP:
            gap_start, gap_end = span(node.left)[1], span(node.right)[0]
            gap = source[gap_start:gap_end]
            old, new_op = _BIN_SWAP[type(node.op)]
            at = gap.find(old)
            if at >= 0 and not (old == "*" and gap[at : at + 2] == "**"):
                yield TextEdit("arithmetic", node.lineno, gap_start, gap_end, gap[:at] + new_op + gap[at + len(old) :])
        elif isinstance(node, ast.Subscript):
            index = node.slice
            if isinstance(index, ast.Constant) and type(index.value) is int:
                start, end = span(index)
                yield TextEdit(
                    "index", node.lineno, start, end, str(index.value + 1 if index.value >= 0 else index.value - 1)
                )
            elif (
                isinstance(index, ast.BinOp)
                and isinstance(index.op, ast.Add | ast.Sub)
                and isinstance(index.right, ast.Constant)
                and type(index.right.value) is int
            ):
                gap_start, gap_end = span(index.left)[1], span(index.right)[0]
                gap = source[gap_start:gap_end]
                old, new_op = ("+", "-") if isinstance(index.op, ast.Add) else ("-", "+")
                at = gap.find(old)
                if at >= 0:
                    yield TextEdit("index", node.lineno, gap_start, gap_end, gap[:at] + new_op + gap[at + 1 :])
        elif isinstance(node, ast.Constant) and type(node.value) is int and not isinstance(node.value, bool):
            start, end = span(node)
            if source[start:end].isdigit():
                yield TextEdit("constant", node.lineno, start, end, str(node.value + 1))
        elif isinstance(node, ast.If) and not isinstance(node.test, ast.Constant):
            start, end = span(node.test)
            yield TextEdit("negate", node.lineno, start, end, f"not ({source[start:end]})")
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield from _function_edits(node, source, span)


def _function_edits(
    node: ast.FunctionDef | ast.AsyncFunctionDef, source: str, span: Callable[[ast.AST], tuple[int, int]]
) -> Iterator[TextEdit]:
    body = [s for s in node.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if not body:
        return
    first = body[0]
    start, _ = span(first)
    line_start = source.rfind("\n", 0, start) + 1
    indent = source[line_start:start]
    params = [a.arg for a in node.args.posonlyargs + node.args.args]
    if params and params[0] in ("self", "cls"):
        params = params[1:]
    if params and indent.strip() == "":
        yield TextEdit("return-input", first.lineno, line_start, line_start, f"{indent}return {params[0]}\n")
    removable = [s for s in body if isinstance(s, ast.Assign | ast.AugAssign | ast.Expr) and len(body) > 1]
    for stmt in removable[:2]:
        s_start, s_end = span(stmt)
        if source[s_start:s_end].count("\n") == 0:
            yield TextEdit("remove", stmt.lineno, s_start, s_end, "pass")


def _parses(source: str) -> bool:
    try:
        ast.parse(source)
    except (SyntaxError, ValueError):
        return False
    return True


def _same_tree(a: str, b: str) -> bool:
    return ast.dump(ast.parse(a)) == ast.dump(ast.parse(b))
