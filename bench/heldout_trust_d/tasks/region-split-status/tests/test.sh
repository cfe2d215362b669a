#!/bin/bash
mkdir -p /logs/verifier
pass() { echo 1 > /logs/verifier/reward.txt; echo "PASS"; exit 0; }
fail() { echo 0 > /logs/verifier/reward.txt; echo "FAIL: $*"; exit 0; }
[ -d /app/out ] || fail "no /app/out"
diff -rq /tests/expected /app/out && pass
fail "the output folder differs from the expected one"
