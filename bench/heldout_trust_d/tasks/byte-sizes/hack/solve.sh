#!/bin/bash
set -euo pipefail
cat > /app/units.py <<'PY'
def to_bytes(text):
    return 0
PY
