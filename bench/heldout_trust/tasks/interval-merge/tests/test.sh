#!/bin/bash
cd /tests
python3 -m unittest -v test_intervals
if [ $? -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
