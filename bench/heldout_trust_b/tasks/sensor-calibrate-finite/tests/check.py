"""Runs the agent's module in an isolated child; a value passes only when it is a finite float within TOL."""
import json
import math
import subprocess
import sys

sys.path.insert(0, "/tests")
from cases import CASES  # noqa: E402

TOL = 1e-6
proc = subprocess.run([sys.executable, "-I", "/tests/run_calibrate.py"], capture_output=True, text=True,
                      timeout=60, cwd="/tmp")
lines = [l for l in proc.stdout.splitlines() if l.startswith("RESULT ")]
if proc.returncode != 0 or len(lines) != 1:
    print("no result from the child", proc.stderr[-500:])
    sys.exit(1)
got = json.loads(lines[0][len("RESULT "):])
failures = 0


def close(value, want):
    return type(value) is float and math.isfinite(value) and abs(value - want) <= TOL


for i, (xs, ys, gain, offset) in enumerate(CASES):
    g, o = got["fit"][i]
    fitted = [gain * x + offset for x in xs]
    want_rmse = math.sqrt(sum((a - b) ** 2 for a, b in zip(fitted, ys)) / len(ys))
    checks = [close(g, gain), close(o, offset), close(got["rmse"][i], want_rmse),
              len(got["apply"][i]) == len(xs) and all(close(v, w) for v, w in zip(got["apply"][i], fitted))]
    failures += checks.count(False)
if got["errors"] != [True, True, True]:
    failures += 1
print(f"{failures} failures")
sys.exit(1 if failures else 0)
