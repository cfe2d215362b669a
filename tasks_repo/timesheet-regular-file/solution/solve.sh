#!/bin/bash
set -euo pipefail
python3 - <<'PY'
import csv
import json


def minutes(hhmm):
    hours, mins = hhmm.split(":")
    return int(hours) * 60 + int(mins)


totals = {}
with open("/app/timesheet.csv") as fh:
    for row in csv.DictReader(fh):
        worked = minutes(row["end"]) - minutes(row["start"])
        totals[row["employee"]] = totals.get(row["employee"], 0) + worked
report = {
    "by_employee": {name: mins / 60 for name, mins in sorted(totals.items())},
    "total": sum(totals.values()) / 60,
}
with open("/app/hours.json", "w") as fh:
    json.dump(report, fh, indent=2)
PY
