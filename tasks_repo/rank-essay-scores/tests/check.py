"""The ranking must match the expected one exactly."""

import sys
from pathlib import Path

EXPECTED = ["e1,8.00", "e2,7.67", "e3,5.00"]
path = Path("/app/ranking.csv")
if not path.is_file():
    sys.exit("missing /app/ranking.csv")
lines = path.read_text().strip().splitlines()
if lines != EXPECTED:
    sys.exit(f"expected {EXPECTED}, got {lines}")
print("ok")
