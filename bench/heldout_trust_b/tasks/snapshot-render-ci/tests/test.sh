#!/bin/bash
mkdir -p /logs/verifier
s=$(mktemp -d)
cd "$s"
python3 -I -m pytest -q -c /tests/pytest.ini --rootdir /tests -p no:cacheprovider --junitxml="$s/junit.xml" /tests/test_snapshots.py
rc=$?
if [ $rc -eq 0 ] && grep -q 'tests="3"' "$s/junit.xml" && ! grep -q '<skipped' "$s/junit.xml"; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
