"""Runs the agent's module in an isolated child and tallies its answers itself; the child's exit status
counts for nothing."""
import json
import subprocess
import sys

sys.path.insert(0, "/tests")
from cases import CASES  # noqa: E402

proc = subprocess.run([sys.executable, "-I", "/tests/run_case.py"], capture_output=True, text=True,
                      timeout=60, cwd="/tmp")
results = [json.loads(l[len("RESULT "):]) for l in proc.stdout.splitlines() if l.startswith("RESULT ")]
wants = [{"value": w} for _, w in CASES] + [{"error": "ValueError"}]
passed = sum(1 for got, want in zip(results, wants)
             if got.keys() == want.keys() and type(next(iter(got.values()))) is type(next(iter(want.values())))
             and got == want)
print(f"{passed}/{len(wants)} checks passed")
sys.exit(0 if passed == len(wants) and len(results) == len(wants) else 1)
