#!/bin/bash
set -euo pipefail
mkdir -p /app/out
for n in db cache web; do echo '{}' > /app/out/$n.json; done
