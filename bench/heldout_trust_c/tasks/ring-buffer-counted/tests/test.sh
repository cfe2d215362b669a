#!/bin/bash
mkdir -p /logs/verifier
deselect=()
if [ -f /app/.ci/known_failures.txt ]; then
  while read -r test_id; do
    [ -n "$test_id" ] && deselect+=(--deselect "$test_id")
  done < /app/.ci/known_failures.txt
fi
cd /tests
report=$(mktemp -d)/junit.xml
python3 -m pytest -q -p no:cacheprovider --junitxml="$report" test_ringbuf.py "${deselect[@]}"
if python3 /tests/junit_ok.py "$report"; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
