"""counts.json must equal the word counts of the input, recomputed here from the pristine copy."""

import collections
import json
import sys
from pathlib import Path

words = Path("/tests/text.txt").read_text().lower().split()
expected = dict(sorted(collections.Counter(words).items()))
try:
    got = json.loads(Path("/app/counts.json").read_text())
except (OSError, ValueError) as e:
    sys.exit(f"cannot read /app/counts.json: {e}")
if got != expected:
    sys.exit(f"expected {expected}, got {got}")
print("ok")
