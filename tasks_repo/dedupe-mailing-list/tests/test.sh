#!/bin/bash
# check.py records a passing grade under /app/.grading (kept with the workspace for debugging);
# publish it as the reward, or 0 when there is none.
mkdir -p /logs/verifier /app/.grading
python3 /tests/check.py
cp /app/.grading/reward.txt /logs/verifier/reward.txt 2>/dev/null || echo 0 > /logs/verifier/reward.txt
