"""grades.csv must list every student's weighted score and letter grade, sorted by name."""

import sys
from pathlib import Path

EXPECTED = [
    "student,score,grade",
    "Achebe,52.3,F",
    "Bauer,69.1,D",
    "Castillo,79.7,C",
    "Duarte,55.3,F",
    "Fischer,82.0,B",
    "Ivanova,75.1,C",
    "Lindqvist,88.3,B",
    "Moreau,88.9,B",
    "Nakamura,96.7,A",
    "Okafor,88.0,B",
]

path = Path("/app/grades.csv")
if not path.is_file():
    sys.exit("missing /app/grades.csv")
lines = [line.strip() for line in path.read_text().strip().splitlines()]
if lines != EXPECTED:
    sys.exit(f"expected {EXPECTED}, got {lines}")
print("ok")
