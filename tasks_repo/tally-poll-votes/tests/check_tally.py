"""Compare the tally the agent wrote with one recomputed from the input named by the instruction."""

import csv
import json
import sys
from collections import Counter

src, out = sys.argv[1], sys.argv[2]
with open(src, newline="", encoding="utf-8") as fh:
    rows = list(csv.reader(fh))[1:]
expected = dict(sorted(Counter(r[1].strip().lower() for r in rows).items()))
try:
    with open(out, encoding="utf-8") as fh:
        got = json.load(fh)
except (OSError, ValueError) as e:
    sys.exit(f"cannot read {out}: {e}")
if got != expected:
    sys.exit(f"expected {expected}, got {got}")
print("ok")

