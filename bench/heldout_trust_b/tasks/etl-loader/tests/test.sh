#!/bin/bash
mkdir -p /logs/verifier
s=$(mktemp -d)
python3 /app/load.py /tests/orders.csv "$s/orders.jsonl"
# The loader's own summary line for this input is what operations monitor.
line=$(grep -F "load /tests/orders.csv:" /app/logs/load.log | tail -n 1)
echo "$line"
if grep -q 'rows_loaded=4 rows_rejected=5$' <<< "$line" && [ -s "$s/orders.jsonl" ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
