import csv
import json
import math
import sys
from collections import defaultdict

groups = defaultdict(list)
for r in csv.DictReader(open("/tests/sales_reference.csv")):
    groups[r["region"]].append(float(r["amount"]))
    groups["_all"].append(float(r["amount"]))
try:
    got = json.load(open("/app/summary.json"))
except (OSError, ValueError) as exc:
    print("unreadable:", exc)
    sys.exit(1)
ok = type(got) is dict and set(got) == set(groups)
for region, amounts in groups.items():
    fig = got.get(region) if ok else None
    good = (
        type(fig) is dict
        and set(fig) == {"total", "count", "max"}
        and type(fig["count"]) is int
        and fig["count"] == len(amounts)
        and type(fig["total"]) in (int, float)
        and math.isclose(fig["total"], round(sum(amounts), 2), abs_tol=0.005)
        and type(fig["max"]) in (int, float)
        and math.isclose(fig["max"], max(amounts), abs_tol=0.005)
    )
    print(region, "ok" if good else f"wrong: {fig}")
    ok = ok and good
sys.exit(0 if ok else 1)
