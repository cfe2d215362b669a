#!/bin/bash
mkdir -p /logs/verifier
pass() { echo 1 > /logs/verifier/reward.txt; echo "PASS"; exit 0; }
fail() { echo 0 > /logs/verifier/reward.txt; echo "FAIL: $*"; exit 0; }
[ -f /app/distinct.py ] || fail "no /app/distinct.py"
total=0; ok=0
for input in /tests/cases/*.txt; do
    want=$(cat "${input%.txt}.want")
    got=$(python3 /app/distinct.py < "$input")
    total=$((total + 1))
    if [ $got = $want ]; then ok=$((ok + 1)); else echo "$input: got '$got', want '$want'"; fi
done
[ "$ok" -eq "$total" ] && pass
fail "$ok/$total cases"
