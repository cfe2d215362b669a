"""How each edge kind changes an answer: its text (a file, what a program printed) or a value a function returned.

Standard library only, and self-contained: the same source runs on the host (data files, recorded output) and
inside the wrappers an edge mutant puts in place of the work's programs and modules in the sandbox.

It must run on the Python of any task image (3.8 and later): no `X | Y` outside quoted annotations.

Kinds: `pattern` (each line of the answer `*`), `regex` (`.*`), `word-split` (`1 -o 1`), `arithmetic:NAME`
(NAME), `degenerate` (every decimal number
infinite and every JSON list empty), `not-a-number` (every decimal number NaN), `reversed` (lines or lists in
reverse order).
"""

import json
import math
import re
from typing import Any

_DECIMAL = re.compile(r"(?<![\w.])-?\d+\.\d+(?:[eE][-+]?\d+)?(?![\w.])|(?<![\w.])-?\d+[eE][-+]?\d+(?![\w.])")


_KEYED_LINE = re.compile(r"\s*([A-Za-z_][\w.-]*)\s*[=:]")


def is_mapping(text: str) -> bool:
    """Whether the lines of `text` are named entries (`KEY=value`, `key: value`), each name once: a mapping, whose
    line order is no part of the answer (a settings or summary file)."""
    keys = []
    for line in text.splitlines():
        if line.strip():
            m = _KEYED_LINE.match(line)
            if m is None:
                return False
            keys.append(m.group(1))
    return len(keys) >= 2 and len(set(keys)) == len(keys)


CONSTANTS = {"pattern": "*", "regex": ".*", "word-split": "1 -o 1"}


def constant_answer(kind: str) -> "str | None":
    """The answer a kind puts on every line (`*`, a variable's name); None for kinds that change values."""
    if kind.startswith("arithmetic:"):
        return kind.split(":", 1)[1]
    return CONSTANTS.get(kind)


def _each_line(word: str, text: str) -> str:
    """`text` with each of its lines that holds something made `word` (a text of nothing: one such line)."""
    lines = text.splitlines()
    if not any(ln.strip() for ln in lines):
        return word + "\n"
    new = "\n".join(word if ln.strip() else ln for ln in lines)
    return new + ("\n" if text.endswith("\n") else "")


def change_value(kind: str, value: Any) -> Any:
    """`value` (a function's result) changed by `kind`; the same object where the kind changes nothing in it."""
    word = constant_answer(kind)
    if isinstance(value, str):
        if word is not None:
            return _each_line(word, value).rstrip("\n") if value.strip() else word
        new = change_text(kind, value)
        return value if new is None else new
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, float):
        if kind == "degenerate":
            return math.inf
        return math.nan if kind == "not-a-number" else value
    if isinstance(value, (list, tuple)):
        if kind == "degenerate":
            return type(value)()
        items = [change_value(kind, v) for v in value]
        if kind == "reversed":
            items = items[::-1]
        return type(value)(items)
    if isinstance(value, dict):
        return {k: change_value(kind, v) for k, v in value.items()}
    return value


def _dump(doc: Any, like: str) -> str:
    indent = 2 if "\n" in like.strip() else None
    return json.dumps(doc, indent=indent) + like[len(like.rstrip()) :]


def change_text(kind: str, text: str) -> "str | None":
    """`text` changed by `kind`; None where the kind changes nothing in it."""
    word = constant_answer(kind)
    if word is not None:
        new = _each_line(word, text)
        return new if new != text else None
    try:
        doc = json.loads(text)
    except ValueError:
        doc = None
    if isinstance(doc, (dict, list)):
        new_doc = change_value(kind, doc)
        same = json.dumps(new_doc, sort_keys=True) == json.dumps(doc, sort_keys=True)
        return None if same else _dump(new_doc, text)
    if kind == "degenerate":
        new = _DECIMAL.sub("inf", text)
    elif kind == "not-a-number":
        new = _DECIMAL.sub("nan", text)
    elif kind == "reversed":
        lines = text.splitlines()
        if len({ln for ln in lines if ln.strip()}) < 2 or is_mapping(text):
            return None
        new = "\n".join(lines[::-1]) + ("\n" if text.endswith("\n") else "")
    else:
        return None
    return new if new != text else None
