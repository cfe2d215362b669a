#!/bin/bash
set -euo pipefail
mkdir -p /app/out
echo '{}' > /app/out/invoice.json
