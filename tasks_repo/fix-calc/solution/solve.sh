#!/bin/bash
set -euo pipefail
python3 - <<'PY'
from pathlib import Path
path = Path("/app/calc.py")
src = path.read_text()
src = src.replace("return sum(xs) // len(xs)", "return sum(xs) / len(xs)")
src = src.replace(
    "    return s[len(s) // 2]\n",
    "    mid = len(s) // 2\n    return s[mid] if len(s) % 2 else (s[mid - 1] + s[mid]) / 2\n",
)
path.write_text(src)
PY
