"""The histogram must match one recomputed from the input the instruction names."""

import json
from collections import Counter
from pathlib import Path


def expected():
    text = Path("/app/notes.txt").read_text(encoding="utf-8")
    counts = Counter(len(w.strip(".,;:!?\"()")) for w in text.split())
    return {str(k): counts[k] for k in sorted(counts) if k}


def test_file_exists():
    assert Path("/app/histogram.json").is_file()


def test_histogram():
    got = json.loads(Path("/app/histogram.json").read_text(encoding="utf-8"))
    assert got == expected()


def test_keys_in_order():
    got = json.loads(Path("/app/histogram.json").read_text(encoding="utf-8"))
    assert list(got) == sorted(got, key=int)
