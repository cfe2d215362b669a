#!/bin/bash
cat > /app/dedupe.py <<'PY'
def dedupe(items):
    """The items without repeats, each kept where it first appears."""
    seen = set()
    out = []
    for item in items:
        if item not in seen:
            seen.add(item)
            out.append(item)
    return out
PY
