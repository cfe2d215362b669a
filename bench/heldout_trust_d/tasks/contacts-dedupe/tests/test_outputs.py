"""Hidden tests for /app/out/contacts.csv."""
import csv
from pathlib import Path

OUT = Path("/app/out/contacts.csv")
EXPECTED = Path("/tests/expected_contacts.csv")


def read(path: Path) -> list[list[str]]:
    with path.open(newline="") as f:
        return list(csv.reader(f))


def test_rows():
    assert read(OUT) == read(EXPECTED)


def test_header():
    assert read(OUT)[0] == ["email", "name"]


def test_rows():
    for row in read(OUT)[1:]:
        assert len(row) == 2
        assert row[0] == row[0].strip().lower()
