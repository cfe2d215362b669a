#!/bin/bash
mkdir -p /logs/verifier
s=$(mktemp -d)
cd "$s"
python3 -I -m pytest -q -c /tests/pytest.ini --rootdir /tests -p no:cacheprovider --junitxml="$s/junit.xml" /tests/test_flatjson.py
rc=$?
# Success only: exit status 0 and a junit report of 10 tests with no failure, error or skip.
if [ $rc -eq 0 ] && grep -q 'tests="10"' "$s/junit.xml" && grep -q 'failures="0"' "$s/junit.xml" \
   && grep -q 'errors="0"' "$s/junit.xml" && grep -q 'skipped="0"' "$s/junit.xml"; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
