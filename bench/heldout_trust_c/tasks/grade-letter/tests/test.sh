#!/bin/bash
mkdir -p /logs/verifier
fail=0
while read -r score want; do
  got=$(python3 /app/grade.py "$score" 2>/dev/null)
  if ! [[ $want == $got ]]; then
    echo "score $score: got '$got', want $want"
    fail=1
  fi
done < /tests/cases.txt
if [ "$fail" = 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
