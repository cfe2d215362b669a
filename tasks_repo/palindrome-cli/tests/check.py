"""Runs /app/pal.py on fixed cases."""

import subprocess
import sys

CASES = {
    "racecar": "yes",
    "A man, a plan, a canal: Panama!": "yes",
    "No 'x' in Nixon": "yes",
    "hello": "no",
    "12321": "yes",
    "12 3 4": "no",
    "?!": "yes",
}
for text, want in CASES.items():
    proc = subprocess.run([sys.executable, "/app/pal.py", text], capture_output=True, text=True, timeout=10)
    if proc.returncode != 0 or proc.stdout.strip() != want:
        sys.exit(f"pal.py {text!r}: exit {proc.returncode}, printed {proc.stdout!r}, expected {want!r}")
proc = subprocess.run([sys.executable, "/app/pal.py"], capture_output=True, text=True, timeout=10)
if proc.returncode != 2 or not proc.stderr.strip():
    sys.exit(f"no argument: expected exit 2 and a usage message, got {proc.returncode}")
print("ok")
