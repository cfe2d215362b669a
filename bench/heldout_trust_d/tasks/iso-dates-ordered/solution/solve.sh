#!/bin/bash
set -euo pipefail
cat > /app/isodate.py <<'PY'
import sys
for line in sys.stdin:
    line = line.strip()
    if line:
        month, day, year = line.split("/")
        print(f"{year}-{month}-{day}")
PY
