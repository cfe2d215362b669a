#!/bin/bash
set -euo pipefail
python3 - <<'PY'
import json
from collections import Counter

text = open("/app/notes.txt", encoding="utf-8").read()
counts = Counter(len(w.strip(".,;:!?\"()")) for w in text.split())
with open("/app/histogram.json", "w", encoding="utf-8") as fh:
    json.dump({str(k): counts[k] for k in sorted(counts) if k}, fh, indent=2)
PY
