#!/bin/bash
mkdir -p /logs/verifier
pass() { echo 1 > /logs/verifier/reward.txt; echo "PASS"; exit 0; }
fail() { echo 0 > /logs/verifier/reward.txt; echo "FAIL: $*"; exit 0; }
[ -f /app/durations.py ] || fail "no /app/durations.py"
cp /tests/test_hidden_durations.py /app/tests/
cd /app && python3 -m unittest discover -v -s tests -t . && pass
fail "unit tests failed"
