#!/bin/bash
cat > /app/invdiff.py <<'PY'
import csv
import sys


def load(path):
    with open(path, newline="") as f:
        return {r["sku"]: (int(r["qty"]), r["location"]) for r in csv.DictReader(f)}


old, new = load(sys.argv[1]), load(sys.argv[2])
both = sorted(old.keys() & new.keys())
print(repr({
    "added": sorted(new.keys() - old.keys()),
    "removed": sorted(old.keys() - new.keys()),
    "changed": {s: (old[s][0], new[s][0]) for s in both if old[s][0] != new[s][0]},
    "moved": {s: (old[s][1], new[s][1]) for s in both if old[s][1] != new[s][1]},
}))
PY
