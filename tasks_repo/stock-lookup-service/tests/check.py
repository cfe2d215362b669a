"""The service on 127.0.0.1:8080 must answer item lookups and the summary from stock.csv."""

import json
import math
import sys
import time
import urllib.error
import urllib.request

BASE = "http://127.0.0.1:8080"
ITEMS = {
    "TEA-01": {"sku": "TEA-01", "name": "Green tea 100g", "qty": 40, "value": 190.0},
    "KET-03": {"sku": "KET-03", "name": "Electric kettle", "qty": 5, "value": 174.95},
    "SPN-06": {"sku": "SPN-06", "name": "Measuring spoon", "qty": 0, "value": 0.0},
}
SUMMARY = {"skus": 6, "units": 140, "value": 865.0}


def get(path: str) -> tuple[int, object]:
    try:
        with urllib.request.urlopen(BASE + path, timeout=3) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as e:
        return e.code, None


def same(got: object, want: dict) -> bool:
    if not isinstance(got, dict) or set(got) != set(want):
        return False
    for key, value in want.items():
        if isinstance(value, float):
            if isinstance(got[key], bool) or not isinstance(got[key], int | float) or not math.isclose(got[key], value):
                return False
        elif got[key] != value or type(got[key]) is not type(value):
            return False
    return True


deadline = time.monotonic() + 5
while True:
    try:
        status, summary = get("/summary")
        break
    except (urllib.error.URLError, ConnectionError, TimeoutError, json.JSONDecodeError) as e:
        if time.monotonic() > deadline:
            sys.exit(f"no service answers on {BASE}: {e}")
        time.sleep(0.25)
if status != 200 or not same(summary, SUMMARY):
    sys.exit(f"/summary: expected 200 {SUMMARY}, got {status} {summary}")
for sku, want in ITEMS.items():
    status, item = get(f"/items/{sku}")
    if status != 200 or not same(item, want):
        sys.exit(f"/items/{sku}: expected 200 {want}, got {status} {item}")
status, _ = get("/items/NOPE-99")
if status != 404:
    sys.exit(f"/items/NOPE-99: expected 404, got {status}")
print("ok")
