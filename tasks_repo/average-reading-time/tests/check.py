"""The reading times must match the expected ones exactly."""

import sys
from pathlib import Path

EXPECTED = ["a1,6.0", "a2,2.3", "a3,15.5"]
path = Path("/app/times.csv")
if not path.is_file():
    sys.exit("missing /app/times.csv")
lines = path.read_text().strip().splitlines()
if lines != EXPECTED:
    sys.exit(f"expected {EXPECTED}, got {lines}")
print("ok")
