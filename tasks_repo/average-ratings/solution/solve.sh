#!/bin/bash
set -euo pipefail
python3 - <<'PY'
import csv
from decimal import ROUND_HALF_UP, Decimal

ratings = {}
with open("/app/reviews.csv") as fh:
    for row in csv.DictReader(fh):
        ratings.setdefault(row["product"], []).append(int(row["rating"]))
with open("/app/ratings.csv", "w", newline="") as fh:
    out = csv.writer(fh, lineterminator="\n")
    out.writerow(["product", "average", "count"])
    for product in sorted(ratings):
        values = ratings[product]
        average = (Decimal(sum(values)) / len(values)).quantize(Decimal("0.1"), ROUND_HALF_UP)
        out.writerow([product, average, len(values)])
PY
