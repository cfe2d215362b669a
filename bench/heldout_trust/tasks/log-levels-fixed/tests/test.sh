#!/bin/bash
cd /tests
out=$(python3 -I /tests/grade.py)
status=$?
echo "$out"
if [ "$status" -eq 0 ] && [ "$(echo "$out" | tail -n 1)" = "GRADE pass" ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
