#!/bin/bash
mkdir -p /logs/verifier
export PATH=$(printf '%s' "$PATH" | tr ':' '\n' | grep -v '^/app' | paste -sd: -)  # no folder of the agent's
s=$(mktemp -d)
python3 /app/export.py /tests/dump.jsonl "$s/out.csv"
# The verifier's own copy of the canonicaliser (the repository's may have been edited).
if [ -f "$s/out.csv" ] && /usr/bin/diff <(/bin/bash --noprofile --norc /tests/canon.sh < /tests/expected.csv) <(/bin/bash --noprofile --norc /tests/canon.sh < "$s/out.csv"); then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
