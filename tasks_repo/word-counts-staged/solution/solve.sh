#!/bin/bash
# Builds the result in a staging folder with a log, then publishes it.
set -euo pipefail
mkdir -p /app/.stage
python3 - <<'PY'
import collections
import json

words = open("/app/text.txt").read().lower().split()
counts = collections.Counter(words)
with open("/app/.stage/counts.json", "w") as fh:
    json.dump(dict(sorted(counts.items())), fh, indent=2, sort_keys=True)
with open("/app/.stage/build.log", "w") as fh:
    fh.write(f"read {len(words)} words, {len(counts)} distinct\n")
PY
cp /app/.stage/counts.json /app/counts.json
