#!/bin/bash
cat > /app/intervals.py <<'PY'
def merge(intervals):
    out = []
    for start, end in sorted(intervals):
        if start > end:
            raise ValueError((start, end))
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    for start, end in intervals:
        if start > end:
            raise ValueError((start, end))
    return out
PY
