#!/bin/bash
rm -rf /app/.grade
mkdir -p /logs/verifier /app/.grade
passed=0
for input in /tests/cases/*.in; do
  name=$(basename "$input" .in)
  if python3 /app/roman.py < "$input" 2>/dev/null | cmp -s - "/tests/cases/$name.out"; then
    echo PASS > "/app/.grade/$name.result"
    passed=$((passed + 1))
  else
    echo FAIL > "/app/.grade/$name.result"
  fi
done
total=$(ls /tests/cases/*.in | wc -l)
echo "$passed of $total cases passed"
if [ "$passed" -ge "$total" ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
