#!/bin/bash
# The grader ships with the tests (under /tests) and checks the tally; its exit status is the reward.
mkdir -p /logs/verifier
if python3 /tests/check_tally.py /app/votes.csv /app/votes.json; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
