#!/bin/bash
set -euo pipefail
python3 - <<'PY'
import csv

key = dict(line.strip().split(":") for line in open("/app/answer_key.txt") if line.strip())
with open("/app/submissions.csv") as src, open("/app/scores.csv", "w", newline="") as dst:
    out = csv.writer(dst, lineterminator="\n")
    out.writerow(["student", "correct", "percent"])
    for row in csv.DictReader(src):
        correct = sum(row[f"q{n}"].strip() == answer for n, answer in key.items())
        out.writerow([row["student"], correct, f"{correct / len(key) * 100:.1f}"])
PY
