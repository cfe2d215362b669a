#!/bin/bash
cp /tests/grade.py /app/grade.py
cd /app
if python3 /app/grade.py; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
rm -f /app/grade.py
