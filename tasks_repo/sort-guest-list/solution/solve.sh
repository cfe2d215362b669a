#!/bin/bash
set -euo pipefail
sed -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//' /app/guests.txt | grep -v '^$' | LC_ALL=C sort -u > /app/guest_list.txt
