#!/bin/bash
set -euo pipefail
cat > /app/durations.py <<'PY'
"""Compact durations ("1h30m") to seconds."""
import re

_UNITS = {"d": 86400, "h": 3600, "m": 60, "s": 1}


def parse_duration(text: str) -> int:
    if not isinstance(text, str) or not re.fullmatch(r"(?:\d+[dhms])+", text):
        raise ValueError(f"not a duration: {text!r}")
    return sum(int(n) * _UNITS[u] for n, u in re.findall(r"(\d+)([dhms])", text))
PY
