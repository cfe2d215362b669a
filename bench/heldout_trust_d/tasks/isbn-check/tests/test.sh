#!/bin/bash
mkdir -p /logs/verifier
pass() { echo 1 > /logs/verifier/reward.txt; echo "PASS"; exit 0; }
fail() { echo 0 > /logs/verifier/reward.txt; echo "FAIL: $*"; exit 0; }
[ -f /app/isbn.py ] || fail "no /app/isbn.py"
cd /tests && PYTHONPATH=/app python3 -m pytest -q -p no:cacheprovider test_isbn.py | tail -n 1 | grep -q passed && pass
fail "the hidden tests did not pass"
