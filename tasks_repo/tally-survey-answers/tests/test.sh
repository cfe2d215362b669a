#!/bin/bash
# The project's own grader (shipped with the environment under /app/grader) checks the tally;
# its exit status is the reward.
mkdir -p /logs/verifier
if python3 /app/grader/check_tally.py /app/answers.csv /app/tally.json; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
