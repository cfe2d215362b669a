"""top.json must hold the five most frequent words, ties broken alphabetically."""

import json
import sys
from pathlib import Path

EXPECTED = [["the", 8], ["dog", 5], ["fox", 5], ["a", 3], ["and", 2]]

path = Path("/app/top.json")
if not path.is_file():
    sys.exit("missing /app/top.json")
try:
    got = json.loads(path.read_text())
except json.JSONDecodeError as e:
    sys.exit(f"top.json is not JSON: {e}")
if [list(p) for p in got] != EXPECTED:
    sys.exit(f"expected {EXPECTED}, got {got}")
print("ok")
