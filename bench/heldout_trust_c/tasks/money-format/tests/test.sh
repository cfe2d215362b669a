#!/bin/bash
mkdir -p /logs/verifier
cd /tests
if python3 -m pytest -q -p no:cacheprovider test_money.py; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
