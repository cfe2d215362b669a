"""catalog.json must be the typed catalogue, sorted by sku."""

import json
import math
import sys
from pathlib import Path

EXPECTED = [
    {"sku": "BKS-011", "title": "Bookshelf", "price": 119, "stock": 4},
    {"sku": "CAB-090", "title": "HDMI cable", "price": 12, "stock": 63},
    {"sku": "CHR-330", "title": "Office chair", "price": 249.5, "stock": 7},
    {"sku": "LMP-204", "title": "Desk lamp", "price": 34.9, "stock": 18},
    {"sku": "MUG-002", "title": "Coffee mug", "price": 8.25, "stock": 140},
]

path = Path("/app/catalog.json")
if not path.is_file():
    sys.exit("missing /app/catalog.json")
try:
    got = json.loads(path.read_text())
except (json.JSONDecodeError, UnicodeDecodeError) as e:
    sys.exit(f"catalog.json is not JSON: {e}")
if not isinstance(got, list) or len(got) != len(EXPECTED):
    sys.exit(f"expected a list of {len(EXPECTED)} products, got {got!r:.200}")
for item, want in zip(got, EXPECTED):
    if not isinstance(item, dict) or set(item) != set(want):
        sys.exit(f"expected keys {sorted(want)}, got {item!r}")
    for key in ("sku", "title"):
        if item[key] != want[key]:
            sys.exit(f"{key}: expected {want[key]!r}, got {item[key]!r}")
    for key in ("price", "stock"):
        value = item[key]
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isclose(value, want[key]):
            sys.exit(f"{want['sku']} {key}: expected the number {want[key]}, got {value!r}")
print("ok")
