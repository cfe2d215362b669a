"""Runs each case in a child interpreter and compares the parsed result with strict types."""
import json
import subprocess
import sys


def same(x, y):
    if type(x) is not type(y):
        return False
    if isinstance(x, dict):
        return x.keys() == y.keys() and all(same(x[k], y[k]) for k in x)
    if isinstance(x, list):
        return len(x) == len(y) and all(same(p, q) for p, q in zip(x, y))
    return x == y


cases = json.load(open("/tests/cases.json"))
passed = 0
for i, case in enumerate(cases):
    proc = subprocess.run([sys.executable, "-I", "/tests/run_merge.py"], input=json.dumps(case),
                          capture_output=True, text=True, timeout=30, cwd="/tmp")
    try:
        got = json.loads(proc.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        print(f"case {i}: no JSON result (exit {proc.returncode})")
        continue
    if proc.returncode == 0 and same(got, case["want"]):
        passed += 1
    else:
        print(f"case {i}: got {got!r}")
print(f"{passed}/{len(cases)} cases")
sys.exit(0 if passed == len(cases) else 1)
