"""calibrated.csv must hold the calibrated readings of known sensors, in input order."""

import sys
from pathlib import Path

EXPECTED = [
    "sensor,timestamp,value",
    "T1,2024-05-01T00:00:00Z,20.00",
    "H2,2024-05-01T00:00:00Z,53.90",
    "T1,2024-05-01T01:00:00Z,19.40",
    "H2,2024-05-01T01:00:00Z,56.35",
    "T3,2024-05-01T01:00:00Z,18.87",
    "T1,2024-05-01T02:00:00Z,18.70",
    "T3,2024-05-01T02:00:00Z,18.46",
]

path = Path("/app/calibrated.csv")
if not path.is_file():
    sys.exit("missing /app/calibrated.csv")
lines = [line.rstrip("\r") for line in path.read_text().strip().splitlines()]
if lines != EXPECTED:
    sys.exit(f"expected {EXPECTED}, got {lines}")
print("ok")
