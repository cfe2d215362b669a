#!/bin/bash
python3 /tests/run_mazes.py > /logs/verifier/run.log 2>&1
cat /logs/verifier/run.log
if grep -q '^VERDICT: PASS' /logs/verifier/run.log; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
