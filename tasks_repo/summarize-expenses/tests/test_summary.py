"""Checks of /app/summary.json against the June expense report."""

import json
import math
from pathlib import Path

import pytest

SUMMARY = Path("/app/summary.json")


@pytest.fixture
def summary():
    if not SUMMARY.exists():
        pytest.skip("summary.json has not been generated")
    return json.loads(SUMMARY.read_text())


def test_categories(summary):
    expected = {
        "meals": (4, 161.70),
        "office": (2, 169.09),
        "software": (2, 348.00),
        "travel": (3, 1688.40),
    }
    assert sorted(summary["by_category"]) == sorted(expected)
    for name, (count, total) in expected.items():
        entry = summary["by_category"][name]
        assert entry["count"] == count
        assert math.isclose(entry["total"], total, abs_tol=0.001)


def test_grand_total(summary):
    assert math.isclose(summary["grand_total"], 2367.19, abs_tol=0.001)


def test_largest_category(summary):
    assert summary["largest_category"] == "travel"
