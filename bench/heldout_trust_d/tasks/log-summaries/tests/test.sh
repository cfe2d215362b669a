#!/bin/bash
mkdir -p /logs/verifier
pass() { echo 1 > /logs/verifier/reward.txt; echo "PASS"; exit 0; }
fail() { echo 0 > /logs/verifier/reward.txt; echo "FAIL: $*"; exit 0; }
[ -f /app/out/levels.txt ] && [ -f /app/out/errors.txt ] || fail "missing output files"
python3 /tests/cmp_file.py /app/out/levels.txt /tests/expected_levels.txt &
python3 /tests/cmp_file.py /app/out/errors.txt /tests/expected_errors.txt &
wait
status=$?
[ "$status" -eq 0 ] && pass
fail "a summary differs"
