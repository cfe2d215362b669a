#!/bin/bash
mkdir -p /logs/verifier
pass() { echo 1 > /logs/verifier/reward.txt; echo "PASS"; exit 0; }
fail() { echo 0 > /logs/verifier/reward.txt; echo "FAIL: $*"; exit 0; }
[ -f /app/rle.py ] || fail "no /app/rle.py"
for input in /tests/cases/*.in; do
    got=$(python3 /app/rle.py "$input")
    want=$(cat "${input%.in}.out")
    [ "$got" = "$want" ] || fail "$input: got '$got', want '$want'"
done
pass
