#!/bin/bash
mkdir -p /logs/verifier
s=$(mktemp -d)
cd "$s"
# -I: neither the current folder nor PYTHON* variables reach sys.path; the tally is the verifier's own.
python3 -I -m unittest discover -s /tests -t /tests -p 'test_*.py' -v > "$s/log" 2>&1
rc=$?
cat "$s/log"
if [ $rc -eq 0 ] && grep -q '^Ran 1 test' "$s/log" && tail -n 1 "$s/log" | grep -qx 'OK'; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
