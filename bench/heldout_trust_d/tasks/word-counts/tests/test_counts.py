"""Hidden tests for /app/out/word_counts.json."""
import json
from pathlib import Path

OUT = Path("/app/out/word_counts.json")
EXPECTED = Path("/tests/expected_word_counts.json")


def test_is_object():
    got = json.loads(OUT.read_text())
    assert isinstance(got, dict) and got


def test_every_count():
    got = json.loads(OUT.read_text())
    want = json.loads(EXPECTED.read_text())
    assert (got.get(word) == count for word, count in want.items())
