"""inventory.json must have the documented shape: typed items, a total and the low-stock list."""

import json
import sys
from pathlib import Path

path = Path("/app/inventory.json")
if not path.is_file():
    sys.exit("missing /app/inventory.json")
try:
    doc = json.loads(path.read_text())
except (json.JSONDecodeError, UnicodeDecodeError) as e:
    sys.exit(f"inventory.json is not JSON: {e}")
if not isinstance(doc, dict) or set(doc) != {"items", "total_value", "low_stock"}:
    sys.exit(f"expected the keys items, total_value, low_stock; got {doc!r:.200}")
items = doc["items"]
if not isinstance(items, list) or len(items) != 6:
    sys.exit("items must list the 6 inventory rows")
types = {"sku": str, "name": str, "qty": int, "unit_price": (int, float)}
for item in items:
    if not isinstance(item, dict) or set(item) != set(types):
        sys.exit(f"bad item {item!r}")
    for key, kind in types.items():
        if not isinstance(item[key], kind) or isinstance(item[key], bool):
            sys.exit(f"{key} of {item!r} has the wrong type")
if not isinstance(doc["total_value"], int | float):
    sys.exit("total_value must be a number")
if not isinstance(doc["low_stock"], list) or not all(isinstance(s, str) for s in doc["low_stock"]):
    sys.exit("low_stock must be a list of SKUs")
print("ok")
