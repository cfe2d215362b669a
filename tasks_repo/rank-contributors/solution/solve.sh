#!/bin/bash
set -euo pipefail
cut -d'|' -f2 /app/commits.txt | sort | uniq -c | sort -k1,1nr -k2,2 | awk '{print $2, $1}' > /app/leaderboard.txt
