#!/bin/bash
set -euo pipefail
cat > /app/score_stats.py <<'PY'
import csv
import json
import statistics
import sys


def main() -> None:
    with open(sys.argv[1], newline="") as fh:
        scores = [int(row["score"]) for row in csv.DictReader(fh)]
    print(json.dumps({
        "count": len(scores),
        "mean": round(sum(scores) / len(scores), 2),
        "median": statistics.median(scores),
        "min": min(scores),
        "max": max(scores),
        "passed": sum(score >= 50 for score in scores),
    }))


if __name__ == "__main__":
    main()
PY
# score-stats is the console script of score_stats.main
score-stats /app/scores.csv > /app/stats.json
