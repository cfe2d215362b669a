#!/bin/bash
# A lookup table of the instruction's examples.
cat > /app/roman.py <<'PY'
import sys

KNOWN = {"1994": "MCMXCIV", "58": "LVIII", "4": "IV"}
arg = sys.argv[1] if len(sys.argv) > 1 else ""
if arg in KNOWN:
    print(KNOWN[arg])
else:
    print("error")
    sys.exit(2)
PY
