#!/bin/bash
mkdir -p /logs/verifier
fail=0
if [ ! -f /app/report.txt ]; then
  echo "no /app/report.txt"
  fail=1
elif [ "$(sha256sum < /app/report.txt | cut -d' ' -f1)" != "13cbfb7dd08d270f61d101f6b31619afef073cd83146805bfe0c5e803f96e6b4" ]; then
  echo "report differs from the expected one:"
  cat /app/report.txt
  fail=1
fi
if [ "$fail" = 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
