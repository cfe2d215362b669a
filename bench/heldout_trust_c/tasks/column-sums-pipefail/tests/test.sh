#!/bin/bash
set -o pipefail
mkdir -p /logs/verifier
if [ ! -f /app/colsum.py ]; then
  echo "no /app/colsum.py"
  echo 0 > /logs/verifier/reward.txt
  exit 0
fi
if python3 /tests/check_colsum.py 2>&1 | tee /logs/verifier/check.log; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
