#!/bin/bash
mkdir -p /logs/verifier
pass() { echo 1 > /logs/verifier/reward.txt; echo "PASS"; exit 0; }
fail() { echo 0 > /logs/verifier/reward.txt; echo "FAIL: $*"; exit 0; }
[ -f /app/roster.txt ] || fail "no /app/roster.txt"
[ "$(wc -l < /app/roster.txt)" -eq "$(wc -l < /tests/expected_roster.txt)" ] || fail "wrong number of names"
echo 0 > /logs/verifier/reward.txt
cat /tests/expected_roster.txt | while IFS= read -r name; do
    grep -qxF "$name" /app/roster.txt || { echo "missing: $name"; exit 1; }
done
LC_ALL=C sort -C /app/roster.txt || fail "not sorted"
pass
