"""Checks /app/grades.json against the expected grades."""
import json
import sys
from pathlib import Path

GRADES = json.loads(Path("/app/grades.json").read_text())
EXPECTED = json.loads(Path("/tests/expected_grades.json").read_text())


def main() -> None:
    if sorted(GRADES) != sorted(EXPECTED):
        sys.exit(f"students differ: {sorted(GRADES)}")
    for student, want in EXPECTED.items():
        got = GRADES[student]
        if got != want or type(got.get("score")) is not float:
            sys.exit(f"{student}: got {got}, want {want}")
    print("grades ok")


if __name__ == "__main__":
    main
