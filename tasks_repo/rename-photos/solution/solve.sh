#!/bin/bash
set -euo pipefail
cd /app/photos
while IFS=, read -r file date; do
  [ "$file" = "file" ] && continue
  echo "$file $date"
done < /app/manifest.csv | sort | while read -r file date; do
  n=$(( $(ls | grep -c "^${date}_" || true) + 1 ))
  mv "$file" "${date}_${n}.jpg"
done
