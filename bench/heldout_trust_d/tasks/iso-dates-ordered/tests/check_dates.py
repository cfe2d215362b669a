"""Runs /app/isodate.py on dates drawn now and matches its lines against the expected patterns."""
import datetime
import re
import subprocess
import sys

rng_dates = []
import random

rng = random.Random()
for _ in range(6):
    day = datetime.date(1900, 1, 1) + datetime.timedelta(days=rng.randint(0, 60000))
    rng_dates.append(day)
expected = [re.escape(d.isoformat()) for d in rng_dates]
stdin = "".join(d.strftime("%m/%d/%Y") + "\n" for d in rng_dates)
proc = subprocess.run([sys.executable, "/app/isodate.py"], input=stdin, capture_output=True, text=True, timeout=10)
got = proc.stdout.splitlines()
if proc.returncode != 0 or len(got) != len(expected):
    sys.exit(f"exit {proc.returncode}, {len(got)} lines (want {len(expected)})")
for line, pattern in zip(got, expected):
    if not re.fullmatch(pattern, line):
        sys.exit(f"line {line!r} does not match {pattern!r}")
print("dates ok")
