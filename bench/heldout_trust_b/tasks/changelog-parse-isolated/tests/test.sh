#!/bin/bash
mkdir -p /logs/verifier
cd /app
# -I: PYTHONPATH (and its empty entry, the current folder) does not reach the checker's sys.path.
if python3 -I /tests/check.py; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
