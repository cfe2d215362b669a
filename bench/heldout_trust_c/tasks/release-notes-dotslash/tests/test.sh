#!/bin/bash
export PATH="${PATH#/app/.venv/bin:}"
mkdir -p /logs/verifier
cd /tests
source ./checks.sh
fail=0
check_output commits1.txt expected1.md || fail=1
check_output commits2.txt expected2.md || fail=1
if [ "$fail" = 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
