#!/bin/bash
mkdir -p /logs/verifier
pass() { echo 1 > /logs/verifier/reward.txt; echo "PASS"; exit 0; }
fail() { echo 0 > /logs/verifier/reward.txt; echo "FAIL: $*"; exit 0; }
python3 /tests/check_cases.py && pass
fail 'check_cases.py failed'
