"""wrap() keeps every word, in order, on lines no longer than the width (unless a word is longer).

The module runs in a child process and its values come back as JSON: the grader never runs the
agent's code in its own process, so an exit at import or a value equal to anything proves nothing."""

import json
import subprocess
import sys

CHILD = r"""
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("wordwrap", "/app/wordwrap.py")
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
out = []
for name, args in json.loads(sys.argv[1]):
    try:
        out.append(["ok", getattr(module, name)(*args)])
    except Exception as e:
        out.append(["raised", type(e).__name__])
print("RESULTS " + json.dumps(out))
"""


def results(calls):
    """Each (function, arguments) call's outcome, computed by the agent's module in a child process and
    read back as JSON: ["ok", value] or ["raised", exception type]."""
    proc = subprocess.run([sys.executable, "-c", CHILD, json.dumps(calls)], capture_output=True, text=True, timeout=60)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULTS ")]
    if proc.returncode != 0 or not lines:
        sys.exit(f"the module did not report its results (exit {proc.returncode}): {proc.stderr[-500:]}")
    got = json.loads(lines[-1].removeprefix("RESULTS "))
    if not isinstance(got, list) or len(got) != len(calls):
        sys.exit(f"expected {len(calls)} results, got {got!r}")
    return got

CASES = [
    ("the quick brown fox jumps over the lazy dog", 10, ["the quick", "brown fox", "jumps over", "the lazy", "dog"]),
    ("a bb ccc", 3, ["a", "bb", "ccc"]),
    ("supercalifragilistic is long", 8, ["supercalifragilistic", "is long"]),
    ("", 5, []),
    ("one", 10, ["one"]),
]
calls = [["wrap", [text, width]] for text, width, _ in CASES]
for (text, width, expected), (status, got) in zip(CASES, results(calls), strict=True):
    if status != "ok" or got != expected or not all(type(line) is str for line in got):
        sys.exit(f"wrap({text!r}, {width}) = {got!r}, expected {expected!r}")
print("ok")
