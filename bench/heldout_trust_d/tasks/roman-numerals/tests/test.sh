#!/bin/bash
mkdir -p /logs/verifier
pass() { echo 1 > /logs/verifier/reward.txt; echo "PASS"; exit 0; }
fail() { echo 0 > /logs/verifier/reward.txt; echo "FAIL: $*"; exit 0; }
[ -f /app/roman.py ] || fail 'no /app/roman.py'
python3 /tests/run_roman.py && pass
fail 'run_roman.py failed'
