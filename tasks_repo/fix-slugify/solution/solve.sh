#!/bin/bash
set -euo pipefail
python3 - <<'PY'
from pathlib import Path

path = Path("/app/slugify.py")
src = path.read_text()
src = src.replace('re.sub(r"[^a-z0-9]", "-", text)', 're.sub(r"[^a-z0-9]+", "-", text).strip("-")')
src = src.replace("return text[:max_length]", 'return text[:max_length].rstrip("-")')
path.write_text(src)
PY
python3 -B /app/tests/test_slugify.py
