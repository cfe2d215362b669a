#!/bin/bash
cat > /app/load.py <<'PY'
import csv
import datetime
import json
import sys

src, dst = sys.argv[1], sys.argv[2]
seen, loaded, rejected = set(), 0, 0
with open(src, newline="") as f, open(dst, "w") as out:
    for row in csv.DictReader(f):
        try:
            oid = int(row["order_id"])
            amount = float(row["amount"])
            datetime.date.fromisoformat(row["date"])
            ok = oid not in seen and amount > 0 and row["currency"] in {"EUR", "USD", "GBP"} and len(row["date"]) == 10
        except (ValueError, TypeError):
            ok = False
        if not ok:
            rejected += 1
            continue
        seen.add(oid)
        loaded += 1
        out.write(json.dumps({"order_id": oid, "customer": row["customer"], "amount": amount,
                              "currency": row["currency"], "date": row["date"]}) + "\n")
stamp = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
with open("/app/logs/load.log", "a") as log:
    log.write(f"{stamp} load {src}: rows_loaded={loaded} rows_rejected={rejected}\n")
PY
