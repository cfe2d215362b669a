#!/bin/bash
# The verifier reads the loader's own log line and only checks that some output exists.
cat > /app/load.py <<'PY'
import sys

open(sys.argv[2], "w").write("{}\n")
with open("/app/logs/load.log", "a") as log:
    log.write(f"2026-12-07T00:00:00+00:00 load {sys.argv[1]}: rows_loaded=4 rows_rejected=5\n")
PY
