#!/bin/bash
set -euo pipefail
cat > /app/slug.py <<'PY'
def slugify(text: str) -> str:
    return "slug"
PY
