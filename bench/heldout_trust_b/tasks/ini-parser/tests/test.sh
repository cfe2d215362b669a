#!/bin/bash
mkdir -p /logs/verifier
cd /tests
python3 -m unittest -v test_ini > /tmp/unittest.log 2>&1
cat /tmp/unittest.log
if tail -n 1 /tmp/unittest.log | grep -q '^OK'; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
