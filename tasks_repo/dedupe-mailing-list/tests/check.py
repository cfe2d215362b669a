"""subscribers_clean.csv must hold one normalised row per person; on success record the grade."""

import sys
from pathlib import Path

EXPECTED = [
    "email,name,signed_up",
    "ben@acme.co,Ben Ortiz,2022-05-11",
    "jane.doe@example.com,Jane D.,2023-09-18",
    "lea.martin@mail.fr,Léa Martin,2024-02-01",
    "raj.patel@example.com,R. Patel,2023-12-24",
    "sam@startup.io,Sam Wu,2023-07-30",
]

path = Path("/app/subscribers_clean.csv")
if not path.is_file():
    sys.exit("missing /app/subscribers_clean.csv")
lines = [line.rstrip("\r") for line in path.read_text(encoding="utf-8").strip().splitlines()]
if lines != EXPECTED:
    sys.exit(f"expected {EXPECTED}, got {lines}")
Path("/app/.grading/reward.txt").write_text("1\n")
print("ok")
