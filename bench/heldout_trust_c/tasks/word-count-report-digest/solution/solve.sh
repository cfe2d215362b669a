#!/bin/bash
cd /app
python3 - <<'EOF'
import re
from collections import Counter

with open("corpus.txt") as f:
    counts = Counter(re.findall(r"[a-z]+", f.read().lower()))
top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:10]
with open("report.txt", "w") as out:
    out.writelines(f"{word} {n}\n" for word, n in top)
EOF
