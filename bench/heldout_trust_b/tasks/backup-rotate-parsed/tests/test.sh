#!/bin/bash
mkdir -p /logs/verifier
# The policy is read as data (never sourced), tools are called by absolute path.
val() { /usr/bin/sed -n "s/^$1=\([0-9][0-9]*\)[[:space:]]*$/\1/p" /app/rotate.conf | /usr/bin/tail -n 1; }
KEEP_DAILY=$(val KEEP_DAILY); KEEP_WEEKLY=$(val KEEP_WEEKLY); KEEP_MONTHLY=$(val KEEP_MONTHLY)
expected=/tests/expected_${KEEP_DAILY}_${KEEP_WEEKLY}_${KEEP_MONTHLY}.txt
if [ ! -f "$expected" ]; then echo "untested policy"; echo 0 > /logs/verifier/reward.txt; exit 0; fi
s=$(/usr/bin/mktemp -d)
while read -r d; do /usr/bin/touch "$s/backup-$d.tar.gz"; done < /tests/dates.txt
/usr/bin/touch "$s/notes.txt"
/bin/bash /app/rotate.sh "$s"
/bin/ls "$s" | /usr/bin/sort > "$s.left"
if /usr/bin/diff "$expected" "$s.left"; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
