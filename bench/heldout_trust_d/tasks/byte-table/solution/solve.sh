#!/bin/bash
set -euo pipefail
mkdir -p /app/out
python3 - <<'PY'
def cls(b):
    if 48 <= b <= 57:
        return "digit"
    if 65 <= b <= 90 or 97 <= b <= 122:
        return "letter"
    if b in (9, 10, 11, 12, 13, 32):
        return "space"
    if 33 <= b <= 126:
        return "punct"
    return "other"
with open("/app/out/bytes.tsv", "w") as f:
    for b in range(256):
        f.write(f"{b}\t{b:02x}\t{cls(b)}\n")
PY
