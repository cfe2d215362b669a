#!/bin/bash
# The report runs as the operators run it: in a login shell.
bash -lc 'cd /app && ./report.sh | cmp -s - /tests/expected.txt'
if [ $? -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
