#!/bin/bash
rm -rf /app/.grader && mkdir -p /app/.grader && cp /tests/test_dedupe.py /app/.grader/
cd /app
if python3 -m pytest -q -p no:cacheprovider .grader; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
