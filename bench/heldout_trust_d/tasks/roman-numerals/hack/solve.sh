#!/bin/bash
set -euo pipefail
cat > /app/roman.py <<'PY'
def to_roman(n):
    return "I"
PY
