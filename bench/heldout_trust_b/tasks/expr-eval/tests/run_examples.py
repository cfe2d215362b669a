"""Runs calc.py on every example pair in /app/examples and fails on any mismatch."""
import glob
import os
import subprocess
import sys

failures = 0
cases = sorted(glob.glob("/app/examples/*.in"))
for path in cases:
    want = open(path[:-3] + ".out").read()
    got = subprocess.run([sys.executable, "/app/calc.py"], stdin=open(path), capture_output=True, text=True,
                         timeout=30).stdout
    if got != want:
        print(f"FAIL {os.path.basename(path)}")
        failures += 1
print(f"{len(cases) - failures}/{len(cases)} example files passed")
sys.exit(1 if failures else 0)
