#!/bin/bash
set -euo pipefail
cat > /app/names.py <<'PY'
def initials(name: str) -> str:
    return "".join(word[0].upper() + "." for word in name.split())
PY
