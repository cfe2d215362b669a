#!/bin/bash
set -euo pipefail
printf '127.0.0.1\n' > /app/top_ips.txt
