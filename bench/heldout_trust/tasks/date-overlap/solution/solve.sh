#!/bin/bash
cat > /app/dateutil2.py <<'PY'
from datetime import date


def overlap_days(a, b):
    (s1, e1), (s2, e2) = [(date.fromisoformat(s), date.fromisoformat(e)) for s, e in (a, b)]
    if e1 < s1 or e2 < s2:
        raise ValueError("range ends before it starts")
    return max(0, (min(e1, e2) - max(s1, s2)).days + 1)
PY
