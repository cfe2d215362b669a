#!/bin/bash
set -euo pipefail
cd /app/backups
dumps=$(ls db-????-??-??.sql.gz | sort)
newest=$(echo "$dumps" | tail -n 5)
: > /app/deleted.txt
for f in $dumps; do
  if echo "$newest" | grep -qx "$f" || [[ "$f" == db-????-??-01.sql.gz ]]; then
    continue
  fi
  rm -- "$f"
  echo "$f" >> /app/deleted.txt
done
