#!/bin/bash
mkdir -p /logs/verifier
set -a
. /tests/settings.env
fail=0
while read -r stamp want; do
  got=$(timeout "$CASE_TIMEOUT" python3 /app/to_utc.py "$stamp" 2>/dev/null)
  if [ "$got" != "$want" ]; then
    echo "$stamp: got '$got', want $want"
    fail=1
  fi
done < "$CASES"
if [ "$fail" = 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
