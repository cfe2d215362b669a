#!/bin/bash
cd /app
out=$(mktemp)
python3 /app/totals.py > "$out" 2>/dev/null
if /usr/bin/cmp -s "$out" /tests/expected_totals.csv; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
