#!/bin/bash
cat > /app/backoff.py <<'PY'
import sys

base, factor, cap = (float(a) for a in sys.argv[1:4])
for k in range(int(sys.argv[4])):
    print(f"{min(cap, base * factor**k):.3f}")
PY
