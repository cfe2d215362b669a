#!/bin/bash
set -euo pipefail
python3 - <<'PY'
import csv
from collections import defaultdict

scores = defaultdict(list)
with open("/app/scores.csv", newline="") as fh:
    for row in csv.DictReader(fh):
        scores[row["essay"]].append(int(row["score"]))
ranking = sorted(scores, key=lambda e: (-sum(scores[e]) / len(scores[e]), e))
with open("/app/ranking.csv", "w") as fh:
    fh.write("".join(f"{e},{sum(scores[e]) / len(scores[e]):.2f}\n" for e in ranking))
PY
