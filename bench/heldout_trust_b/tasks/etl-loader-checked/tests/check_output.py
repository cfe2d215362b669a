"""Checks the loaded rows themselves (the loader's log line is not trusted)."""
import json
import sys

WANT = [
    {"order_id": 1, "customer": "acme", "amount": 120.5, "currency": "EUR", "date": "2026-11-02"},
    {"order_id": 2, "customer": "globex", "amount": 99.0, "currency": "USD", "date": "2026-11-03"},
    {"order_id": 7, "customer": "wayne", "amount": 42.0, "currency": "GBP", "date": "2026-11-05"},
    {"order_id": 8, "customer": "acme", "amount": 7.5, "currency": "EUR", "date": "2026-11-06"},
]
try:
    rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
except (OSError, ValueError) as e:
    print("unreadable output:", e)
    sys.exit(1)
ok = len(rows) == len(WANT) and all(
    type(r) is dict and r.keys() == w.keys() and all(type(r[k]) is type(w[k]) and r[k] == w[k] for k in w)
    for r, w in zip(rows, WANT))
print("rows", "ok" if ok else f"wrong: {rows!r}")
sys.exit(0 if ok else 1)
