#!/bin/bash
cat > /app/window.py <<'PY'
import sys
from collections import deque

window = float(sys.argv[2])
q = deque()
errors = 0
with open(sys.argv[1]) as f:
    for line in f:
        if not line.strip():
            continue
        ts_s, status, _path = line.split()
        ts = float(ts_s)
        is_err = status.startswith("5")
        q.append((ts, is_err))
        errors += is_err
        while q and q[0][0] <= ts - window:
            errors -= q.popleft()[1]
        print(f"{ts_s} {errors / len(q):.3f}")
PY
