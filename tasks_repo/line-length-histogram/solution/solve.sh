#!/bin/bash
set -euo pipefail
python3 - <<'PY'
import json
from collections import Counter

text = open("/app/poem.txt", encoding="utf-8").read()
counts = Counter(len(line) for line in text.split("\\n")[:-1] if line)
with open("/app/lines.json", "w", encoding="utf-8") as fh:
    json.dump({str(k): counts[k] for k in sorted(counts) if k}, fh, indent=2)
PY
