#!/bin/bash
set -euo pipefail
# The job writes _SUCCESS once every part is complete; never read a half-written export.
until [ -f /app/export/_SUCCESS ]; do
  sleep 1
done
parts=$(ls /app/export/part-*.csv | sort)
head -n 1 $(echo "$parts" | head -n 1) > /app/export.csv
for p in $parts; do
  tail -n +2 "$p" >> /app/export.csv
done
