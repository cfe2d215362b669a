#!/bin/bash
python3 - <<'PY'
import csv, json
from collections import defaultdict
rows = list(csv.DictReader(open("/app/sales.csv")))
groups = defaultdict(list)
for r in rows:
    groups[r["region"]].append(float(r["amount"]))
    groups["_all"].append(float(r["amount"]))
out = {k: {"total": round(sum(v), 2), "count": len(v), "max": max(v)} for k, v in sorted(groups.items())}
json.dump(out, open("/app/summary.json", "w"), indent=2, sort_keys=True)
PY
