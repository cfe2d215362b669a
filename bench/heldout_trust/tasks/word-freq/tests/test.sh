#!/bin/bash
cd /app
python3 -m pytest -q -p no:cacheprovider /tests/test_wordfreq.py
status=$?
if [ "$status" -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
