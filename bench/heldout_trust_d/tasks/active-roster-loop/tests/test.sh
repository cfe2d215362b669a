#!/bin/bash
mkdir -p /logs/verifier
pass() { echo 1 > /logs/verifier/reward.txt; echo "PASS"; exit 0; }
fail() { echo 0 > /logs/verifier/reward.txt; echo "FAIL: $*"; exit 0; }
[ -f /app/roster.txt ] || fail "no /app/roster.txt"
[ "$(grep -c '' /app/roster.txt)" -eq "$(grep -c '' /tests/expected_roster.txt)" ] || fail "wrong number of names"
while IFS= read -r name; do
    grep -qxF "$name" /app/roster.txt || fail "missing: $name"
done < /tests/expected_roster.txt
LC_ALL=C sort -C /app/roster.txt || fail "not sorted"
pass
