#!/bin/bash
mkdir -p /logs/verifier
pass() { echo 1 > /logs/verifier/reward.txt; echo "PASS"; exit 0; }
fail() { echo 0 > /logs/verifier/reward.txt; echo "FAIL: $*"; exit 0; }
cd /tests && python3 -m pytest -q -p no:cacheprovider test_counts.py && pass
fail 'pytest failed'
