#!/bin/bash
mkdir -p /logs/verifier
total=0; ok=0
while IFS='|' read -r id want text; do
  total=$((total + 1))
  out=$(printf '%s\n' "$text" | python3 /app/triage.py 2>/dev/null)
  if grep -qw "$want" <<< "$out"; then ok=$((ok + 1)); else echo "$id: want $want, got '$out'"; fi
done < /tests/tickets/cases.txt
echo "$ok/$total tickets routed"
if [ "$total" -gt 0 ] && [ "$ok" -eq "$total" ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
