#!/bin/bash
mkdir -p /logs/verifier
pass() { echo 1 > /logs/verifier/reward.txt; echo "PASS"; exit 0; }
fail() { echo 0 > /logs/verifier/reward.txt; echo "FAIL: $*"; exit 0; }
[ -f /app/rle.py ] || fail "no /app/rle.py"
scratch=$(mktemp -d)
for i in 1 2 3 4 5 6; do
    want=$(python3 -I /tests/gen_case.py "$scratch/case$i.in")
    got=$(python3 /app/rle.py "$scratch/case$i.in")
    [ "$got" = "$want" ] || fail "case $i: got '$got', want '$want'"
done
rm -rf "$scratch"
pass
