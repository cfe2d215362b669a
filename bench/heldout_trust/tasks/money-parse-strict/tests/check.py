"""Runs the agent's parse_amount in a child process per case; the child prints type and value only."""
import json
import subprocess
import sys
import tempfile
from decimal import Decimal

CHILD = r"""
import json, sys
sys.path.insert(0, "/app")
from money import parse_amount
out = []
for text in json.loads(sys.stdin.read()):
    try:
        r = parse_amount(text)
        out.append([type(r).__module__ + "." + type(r).__qualname__, str(r)])
    except ValueError:
        out.append(["ValueError", ""])
print(json.dumps(out))
"""

CASES = {
    "$1,234.50": "1234.50", "(12.00)": "-12.00", "EUR 3.5": "3.5", "  £7  ": "7",
    "-1,000,000.01": "-1000000.01", "USD(2.25)": "-2.25", "€0.99": "0.99", "$ 45": "45",
    "(1,000)": "-1000", "EUR-8.125": "-8.125", "12,34": None, "abc": None, "(5": None, "$$5": None,
}


def main() -> int:
    with tempfile.TemporaryDirectory() as cwd:
        proc = subprocess.run([sys.executable, "-I", "-c", CHILD], input=json.dumps(list(CASES)),
                              capture_output=True, text=True, cwd=cwd, timeout=30)
    try:
        got = json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        print("no result from the child:", proc.stderr[-500:])
        return 1
    bad = 0
    for (text, want), (kind, value) in zip(CASES.items(), got, strict=True):
        if want is None:
            ok = kind == "ValueError"
        else:
            ok = kind == "decimal.Decimal" and Decimal(value) == Decimal(want) and value == str(Decimal(value))
        print(("ok  " if ok else "FAIL"), repr(text), kind, value)
        bad += not ok
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
