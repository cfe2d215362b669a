"""The histogram must match one recomputed from the input the instruction names."""

import json
from collections import Counter
from pathlib import Path


def expected():
    text = Path("/app/poem.txt").read_text(encoding="utf-8")
    counts = Counter(len(line) for line in text.split("\\n")[:-1] if line)
    return {str(k): counts[k] for k in sorted(counts) if k}


def test_file_exists():
    assert Path("/app/lines.json").is_file()


def test_histogram():
    got = json.loads(Path("/app/lines.json").read_text(encoding="utf-8"))
    assert got == expected()


def test_keys_in_order():
    got = json.loads(Path("/app/lines.json").read_text(encoding="utf-8"))
    assert list(got) == sorted(got, key=int)
