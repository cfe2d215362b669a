#!/bin/bash
set -euo pipefail
cat > /app/rle.py <<'PY'
import itertools
import sys

text = open(sys.argv[1]).read().rstrip("\n")
print("".join(f"{ch}{len(list(run))}" for ch, run in itertools.groupby(text)))
PY
