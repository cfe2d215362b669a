#!/bin/bash
mkdir -p /logs/verifier
. /tests/expected.env
s=$(mktemp -d)
python3 /app/quota.py /tests/listing.txt "$s/summary.env"
if [ -f "$s/summary.env" ]; then . "$s/summary.env"; fi
if [ "$TOTAL_BYTES" = "$WANT_TOTAL_BYTES" ] && [ "$TOP_USER" = "$WANT_TOP_USER" ] \
   && [ "$OVER_QUOTA" = "$WANT_OVER_QUOTA" ] && [ "$FILES" = "$WANT_FILES" ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo "got TOTAL_BYTES=$TOTAL_BYTES TOP_USER=$TOP_USER OVER_QUOTA=$OVER_QUOTA FILES=$FILES"
  echo 0 > /logs/verifier/reward.txt
fi
