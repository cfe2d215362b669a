#!/bin/bash
cd /app
python3 /app/totals.py > /tmp/totals_out.csv 2>/tmp/totals_err.txt
if diff -q /tmp/totals_out.csv /app/fixtures/expected_totals.csv; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
