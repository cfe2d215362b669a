#!/bin/bash
mkdir -p /logs/verifier
pass() { echo 1 > /logs/verifier/reward.txt; echo "PASS"; exit 0; }
fail() { echo 0 > /logs/verifier/reward.txt; echo "FAIL: $*"; exit 0; }
[ -f /app/distinct.py ] || fail "no /app/distinct.py"
for i in 1 2 3 4 5 6; do
    text=$(python3 -I /tests/gen_text.py)
    want=$(printf '%s\n' "$text" | python3 -I /tests/ref_distinct.py)
    got=$(printf '%s\n' "$text" | python3 /app/distinct.py)
    [ "$got" = "$want" ] || fail "case $i: got '$got', want '$want'"
done
pass
