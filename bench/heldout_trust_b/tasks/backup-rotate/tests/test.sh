#!/bin/bash
mkdir -p /logs/verifier
. /app/rotate.conf
expected=/tests/expected_${KEEP_DAILY}_${KEEP_WEEKLY}_${KEEP_MONTHLY}.txt
if [ ! -f "$expected" ]; then echo "untested policy"; echo 0 > /logs/verifier/reward.txt; exit 0; fi
s=$(mktemp -d)
while read -r d; do touch "$s/backup-$d.tar.gz"; done < /tests/dates.txt
touch "$s/notes.txt"
bash /app/rotate.sh "$s"
ls "$s" | sort > "$s.left"
if diff "$expected" "$s.left"; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
