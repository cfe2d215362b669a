"""Writes the expected ranking for the task's tests (run once when the task was made)."""
import csv
from collections import defaultdict

scores = defaultdict(list)
with open("/app/scores.csv", newline="") as fh:
    for row in csv.DictReader(fh):
        scores[row["essay"]].append(int(row["score"]))
ranking = sorted(scores, key=lambda e: (-sum(scores[e]) / len(scores[e]), e))
EXPECTED = "\n".join(f"{e},{sum(scores[e]) / len(scores[e]):.2f}" for e in ranking)
