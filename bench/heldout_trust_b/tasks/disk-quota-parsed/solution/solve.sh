#!/bin/bash
cat > /app/quota.py <<'PY'
import sys
from collections import Counter

use = Counter()
files = 0
with open(sys.argv[1]) as f:
    for line in f:
        if not line.strip():
            continue
        size, owner, _path = line.split(maxsplit=2)
        use[owner] += int(size)
        files += 1
top = min(use, key=lambda o: (-use[o], o)) if use else ""
over = ",".join(sorted(o for o, b in use.items() if b > 1073741824))
with open(sys.argv[2], "w") as out:
    out.write(f"TOTAL_BYTES={sum(use.values())}\nTOP_USER={top}\nOVER_QUOTA={over}\nFILES={files}\n")
PY
