"""Runs /app/isodate.py and matches its lines against the expected patterns (the header has a clock time)."""
import re
import subprocess
import sys

DATES = ['03/14/2024', '12/31/1999', '01/01/2000', '07/04/1776', '02/29/2024']
expected = []
for d in DATES:
    m, day, y = d.split("/")
    expected.append(f"{y}-{m}-{day}")
proc = subprocess.run([sys.executable, "/app/isodate.py"], input="\n".join(DATES) + "\n",
                      capture_output=True, text=True, timeout=10)
got = proc.stdout.splitlines()
if proc.returncode != 0 or len(got) != len(expected):
    sys.exit(f"exit {proc.returncode}, {len(got)} lines (want {len(expected)})")
for line, want in zip(got, expected):
    # fullmatch, so that a line holding only a prefix of the date does not pass
    if not re.fullmatch(line, want):
        sys.exit(f"line {line!r} does not match {want!r}")
print("dates ok")
