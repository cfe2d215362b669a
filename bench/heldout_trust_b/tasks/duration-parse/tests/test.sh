#!/bin/bash
mkdir -p /logs/verifier
cd /app
python3 -m doctest -v /app/durations.py > /tmp/doctest.log 2>&1
rc=$?
tail -n 3 /tmp/doctest.log
if [ $rc -eq 0 ] && tail -n 1 /tmp/doctest.log | grep -q '^Test passed\.$'; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
