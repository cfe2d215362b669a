#!/bin/bash
set -euo pipefail
cat > /app/pal.py <<'PY'
import sys

if len(sys.argv) != 2:
    print("usage: pal.py TEXT", file=sys.stderr)
    sys.exit(2)
chars = [c.lower() for c in sys.argv[1] if c.isalnum()]
print("yes" if chars == chars[::-1] else "no")
PY
