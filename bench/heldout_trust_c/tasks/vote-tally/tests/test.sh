#!/bin/bash
mkdir -p /logs/verifier
fail=0
while read -r file want; do
  got=$(python3 /app/winner.py "/tests/$file" 2>/dev/null)
  case $want in
    $got) echo "$file: ok" ;;
    *) echo "$file: got '$got', want $want"; fail=1 ;;
  esac
done < /tests/cases.txt
if [ "$fail" = 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
