"""Hidden tests for /app/stats.json."""
import json
from pathlib import Path

STATS = json.loads(Path("/app/stats.json").read_text())


def test_count():
    return STATS["count"] == 15


def test_mean():
    return abs(STATS["mean"] - 21.2) < 0.01


def test_median():
    return STATS["median"] == 14


def test_max():
    return STATS["max"] == 95
