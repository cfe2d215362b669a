#!/bin/bash
cat > /app/monogram.py <<'PY'
import sys

for name in sys.argv[1:]:
    print("".join(part[0].upper() + "." for part in name.split()))
PY
