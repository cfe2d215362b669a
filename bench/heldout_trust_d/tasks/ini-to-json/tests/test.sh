#!/bin/bash
mkdir -p /logs/verifier
pass() { echo 1 > /logs/verifier/reward.txt; echo "PASS"; exit 0; }
fail() { echo 0 > /logs/verifier/reward.txt; echo "FAIL: $*"; exit 0; }
[ -d /app/out ] || fail "no /app/out"
n=$(find /app/out -name '*.json' | wc -l)
[ "$n" -eq 3 ] || fail "want 3 JSON files, found $n"
find /app/out -name '*.json' -exec python3 /tests/validate.py {} \; && pass
fail "a file did not validate"
