#!/bin/bash
set -euo pipefail
awk -F, 'NR > 1 && $2 == "active" {print $1}' /app/members.csv | LC_ALL=C sort > /app/roster.txt
