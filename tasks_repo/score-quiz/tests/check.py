"""Scores each student's row of /app/scores.csv and writes /logs/verifier/reward.json."""

import csv
import json

EXPECTED = {
    "hana": ("8", "100.0"),
    "ivan": ("5", "62.5"),
    "jonas": ("5", "62.5"),
    "kemi": ("0", "0.0"),
    "luca": ("7", "87.5"),
}

with open("/app/scores.csv", newline="") as fh:
    rows = list(csv.reader(fh))

scores = {}
header_ok = bool(rows) and rows[0] == ["student", "correct", "percent"]
order = [row[0] for row in rows[1:] if row]
for student, want in EXPECTED.items():
    got = next((tuple(row[1:]) for row in rows[1:] if row and row[0] == student), None)
    scores[student] = int(header_ok and got == want and order == list(EXPECTED))
with open("/logs/verifier/reward.json", "w") as fh:
    json.dump(scores, fh)
print(scores)
