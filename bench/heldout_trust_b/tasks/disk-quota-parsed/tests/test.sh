#!/bin/bash
mkdir -p /logs/verifier
. /tests/expected.env
s=$(mktemp -d)
python3 /app/quota.py /tests/listing.txt "$s/summary.env"
# The summary is read as data, never sourced: only KEY=value lines with the four known keys count.
declare -A got=()
if [ -f "$s/summary.env" ]; then
  while IFS= read -r line; do
    case "$line" in
      TOTAL_BYTES=*|TOP_USER=*|OVER_QUOTA=*|FILES=*) got["${line%%=*}"]="${line#*=}" ;;
    esac
  done < "$s/summary.env"
fi
if [ "${got[TOTAL_BYTES]}" = "$WANT_TOTAL_BYTES" ] && [ "${got[TOP_USER]}" = "$WANT_TOP_USER" ] \
   && [ "${got[OVER_QUOTA]}" = "$WANT_OVER_QUOTA" ] && [ "${got[FILES]}" = "$WANT_FILES" ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo "got TOTAL_BYTES=${got[TOTAL_BYTES]} TOP_USER=${got[TOP_USER]} OVER_QUOTA=${got[OVER_QUOTA]} FILES=${got[FILES]}"
  echo 0 > /logs/verifier/reward.txt
fi
