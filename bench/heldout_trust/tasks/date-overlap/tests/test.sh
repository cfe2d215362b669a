#!/bin/bash
cd /tests
python3 -m unittest test_overlap 2>&1 | tee /logs/verifier/unittest.log
if grep -q '^OK' /logs/verifier/unittest.log; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
