#!/bin/bash
mkdir -p /logs/verifier
s=$(mktemp -d)
python3 /app/export.py /tests/dump.jsonl "$s/out.csv"
if [ -f "$s/out.csv" ] && diff <(bash /app/scripts/canon.sh < /tests/expected.csv) <(bash /app/scripts/canon.sh < "$s/out.csv"); then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
