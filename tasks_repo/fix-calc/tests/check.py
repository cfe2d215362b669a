"""Behavioural checks of /app/calc.py.

The module runs in a child process and its values come back as JSON: the grader never runs the
agent's code in its own process, so an exit at import or a value equal to anything proves nothing."""

import json
import subprocess
import sys

CHILD = r"""
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("calc", "/app/calc.py")
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

import math  # noqa: E402

CASES = [
    ("mean", [1, 2], 1.5),
    ("mean", [3, 4, 8], 5.0),
    ("median", [5, 1, 3], 3),
    ("median", [4, 1, 3, 2], 2.5),
    ("median", [7], 7),
    ("variance", [1, 2, 3, 4], 1.25),
]
EMPTY = ["mean", "median", "variance"]
calls = [[name, [xs]] for name, xs, _ in CASES] + [[name, [[]]] for name in EMPTY]
outcomes = results(calls)
for (name, xs, want), (status, got) in zip(CASES, outcomes, strict=False):
    if status != "ok" or type(got) not in (int, float) or not math.isclose(got, want):
        sys.exit(f"{name}({xs}) = {got!r}, expected {want!r}")
for name, (status, got) in zip(EMPTY, outcomes[len(CASES) :], strict=True):
    if (status, got) != ("raised", "ValueError"):
        sys.exit(f"{name}([]) must raise ValueError")
print("ok")
