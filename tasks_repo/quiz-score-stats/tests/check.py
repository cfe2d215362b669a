"""/app/score-stats must compute the statistics of any scores CSV, and stats.json those of scores.csv."""

import json
import math
import os
import subprocess
import sys
from pathlib import Path

TOOL = Path("/app/score-stats")
SCORES = {"count": 9, "mean": 64.89, "median": 67, "min": 31, "max": 92, "passed": 7}
OTHER = {"count": 6, "mean": 59.33, "median": 65.5, "min": 12, "max": 100, "passed": 4}


def same(got: object, want: dict) -> bool:
    if not isinstance(got, dict) or set(got) != set(want):
        return False
    return all(
        isinstance(got[key], int | float) and not isinstance(got[key], bool) and math.isclose(got[key], value)
        for key, value in want.items()
    )


if not TOOL.is_file() or not os.access(TOOL, os.X_OK):
    sys.exit("missing executable /app/score-stats")
proc = subprocess.run([str(TOOL), "/tests/other.csv"], capture_output=True, text=True, timeout=20)
if proc.returncode != 0:
    sys.exit(f"score-stats exited {proc.returncode}: {proc.stderr[-500:]}")
try:
    printed = json.loads(proc.stdout)
except json.JSONDecodeError:
    sys.exit(f"score-stats did not print JSON: {proc.stdout[:200]!r}")
if not same(printed, OTHER):
    sys.exit(f"score-stats on other scores: expected {OTHER}, got {printed}")

stats = Path("/app/stats.json")
if not stats.is_file():
    sys.exit("missing /app/stats.json")
try:
    saved = json.loads(stats.read_text())
except (json.JSONDecodeError, UnicodeDecodeError) as e:
    sys.exit(f"stats.json is not JSON: {e}")
if not same(saved, SCORES):
    sys.exit(f"stats.json: expected {SCORES}, got {saved}")
print("ok")
