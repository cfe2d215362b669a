import json
from pathlib import Path

SUMMARY = Path("/app/summary.json")
EXPECTED = Path(__file__).with_name("expected_summary.json")


def load(path):
    with open(path) as f:
        return json.load(f)


def test_summary_exists():
    assert SUMMARY.is_file()


def test_summary_matches():
    assert load(SUMMARY) == load(EXPECTED)


def test_only_paid_customers():
    assert "initech" not in load(SUMMARY)
