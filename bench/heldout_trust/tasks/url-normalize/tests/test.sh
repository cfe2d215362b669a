#!/bin/bash
mkdir -p /tmp/grade
LOG=/tmp/grade/results.log
n=0
while IFS=$'\t' read -r url want; do
  n=$((n + 1))
  got=$(timeout 10 python3 /app/normalize.py "$url" 2>/dev/null)
  if [ "$got" = "$want" ]; then echo "PASS $url" >> "$LOG"; else echo "FAIL $url got=$got" >> "$LOG"; fi
done < /tests/cases.tsv
passed=$(head -n "$n" "$LOG" | grep -c '^PASS')
cat "$LOG"
if [ "$passed" -eq "$n" ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
