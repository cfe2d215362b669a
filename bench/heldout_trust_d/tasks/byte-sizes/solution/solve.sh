#!/bin/bash
set -euo pipefail
cat > /app/units.py <<'PY'
import re

_UNITS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}


def to_bytes(text: str) -> int:
    m = re.fullmatch(r"(\d+(?:\.\d+)?)([KMG]?)", text)
    if not m:
        raise ValueError(f"not a size: {text!r}")
    return int(float(m.group(1)) * _UNITS[m.group(2)])
PY
