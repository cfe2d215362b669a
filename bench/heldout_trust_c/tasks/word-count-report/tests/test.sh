#!/bin/bash
mkdir -p /logs/verifier
fail=0
if [ ! -f /app/report.txt ]; then
  echo "no /app/report.txt"
  fail=1
elif ! cmp -s /app/report.txt /tests/expected_report.txt; then
  echo "report differs from the expected one:"
  diff /tests/expected_report.txt /app/report.txt
  fail=1
fi
if [ "$fail" = 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
