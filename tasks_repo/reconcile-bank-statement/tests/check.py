"""unmatched.csv must hold exactly the statement lines with no ledger match, in statement order."""

import sys
from pathlib import Path

EXPECTED = [
    "date,description,amount",
    "2024-05-03,CARD AWS EMEA,-412.37",
    "2024-05-09,BANK FEE,-25.00",
    "2024-05-28,INTEREST,3.12",
]

path = Path("/app/unmatched.csv")
if not path.is_file():
    sys.exit("missing /app/unmatched.csv")
lines = [line.rstrip("\r") for line in path.read_text().strip().splitlines()]
if lines != EXPECTED:
    sys.exit(f"expected {EXPECTED}, got {lines}")
print("ok")
