#!/bin/bash
set -euo pipefail
python3 - <<'PY'
import csv
from datetime import datetime, timezone
from zoneinfo import ZoneInfo

with open("/app/meetings.csv") as src, open("/app/meetings_utc.csv", "w", newline="") as dst:
    out = csv.writer(dst, lineterminator="\n")
    out.writerow(["title", "utc_time"])
    for row in csv.DictReader(src):
        local = datetime.strptime(row["local_time"], "%Y-%m-%d %H:%M").replace(tzinfo=ZoneInfo(row["tz"]))
        out.writerow([row["title"], local.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%MZ")])
PY
