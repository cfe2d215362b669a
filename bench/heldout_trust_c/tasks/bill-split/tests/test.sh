#!/bin/bash
mkdir -p /logs/verifier
fail=0
while read -r total people want; do
  got=$(python3 /app/split.py "$total" "$people" 2>/dev/null)
  if ! [[ $got -eq $want ]]; then
    echo "split $total $people: got '$got', want $want"
    fail=1
  fi
done < /tests/cases.txt
if [ "$fail" = 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
