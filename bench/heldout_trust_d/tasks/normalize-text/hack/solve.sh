#!/bin/bash
set -euo pipefail
mkdir -p /app/out
echo 'not normalised' > /app/out/normalized.txt
