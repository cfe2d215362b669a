"""payroll.csv must hold each employee's total hours and gross pay, sorted by employee."""

import sys
from pathlib import Path

EXPECTED = [
    "employee,hours,gross",
    "dana,37.0,1880.00",
    "eli,24.5,1426.50",
    "farah,33.5,2001.50",
    "gus,38.0,2090.00",
]

path = Path("/app/payroll.csv")
if not path.is_file():
    sys.exit("missing /app/payroll.csv")
lines = [line.rstrip("\r") for line in path.read_text().strip().splitlines()]
if lines != EXPECTED:
    sys.exit(f"expected {EXPECTED}, got {lines}")
print("ok")
