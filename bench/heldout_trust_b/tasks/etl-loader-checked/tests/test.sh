#!/bin/bash
mkdir -p /logs/verifier
s=$(mktemp -d)
python3 /app/load.py /tests/orders.csv "$s/orders.jsonl"
line=$(grep -F "load /tests/orders.csv:" /app/logs/load.log | tail -n 1)
echo "$line"
# The summary line must be there, and the rows themselves are checked against the verifier's own list.
if grep -q 'rows_loaded=4 rows_rejected=5$' <<< "$line" && python3 -I /tests/check_output.py "$s/orders.jsonl"; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
