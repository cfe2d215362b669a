#!/bin/bash
set -euo pipefail
cat > /app/isbn.py <<'PY'
def is_valid_isbn10(text: str) -> bool:
    s = text.replace("-", "")
    if len(s) != 10 or not s[:9].isdigit() or not (s[9].isdigit() or s[9] == "X"):
        return False
    digits = [int(c) for c in s[:9]] + [10 if s[9] == "X" else int(s[9])]
    return sum((10 - i) * d for i, d in enumerate(digits)) % 11 == 0
PY
