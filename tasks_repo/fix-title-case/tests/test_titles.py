"""title_case() capitalises words but the small ones (unless first).

The module runs in a child process and its values come back as JSON: the grader never runs the
agent's code in its own process, so an exit at import or a value equal to anything proves nothing."""

import json
import subprocess
import sys

CHILD = r"""
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("titles", "/app/titles.py")
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

CASES = {
    "the lord of the rings": "The Lord of the Rings",
    "A TALE OF TWO CITIES": "A Tale of Two Cities",
    "war and peace": "War and Peace",
    "in the heat of the night": "In the Heat of the Night",
    "an apple a day": "An Apple a Day",
}
for (text, expected), (status, got) in zip(CASES.items(), results([["title_case", [t]] for t in CASES]), strict=True):
    if status != "ok" or type(got) is not str or got != expected:
        sys.exit(f"title_case({text!r}) = {got!r}, expected {expected!r}")
print("ok")
