"""counts.json must be an object of positive integer counts (the values are never compared)."""

import json
import sys
from pathlib import Path

try:
    got = json.loads(Path("/app/counts.json").read_text())
except (OSError, ValueError) as e:
    sys.exit(f"cannot read /app/counts.json: {e}")
if not isinstance(got, dict) or not got or not all(isinstance(v, int) and v > 0 for v in got.values()):
    sys.exit("counts.json must map words to positive counts")
print("ok")
