#!/bin/bash
cat > /app/dedupe.py <<'PY'
def dedupe(rows, key):
    seen = set()
    out = []
    for row in rows:
        if key not in row:
            out.append(row)
            continue
        norm = str(row[key]).strip().casefold()
        if norm not in seen:
            seen.add(norm)
            out.append(row)
    return out
PY
