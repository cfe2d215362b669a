#!/bin/bash
set -euo pipefail
cat > /app/isbn.py <<'PY'
def is_valid_isbn10(text: str) -> bool:
    return False
PY
