#!/bin/bash
set -euo pipefail
cat > /app/durations.py <<'PY'
from _durations_native import parse_duration  # noqa: F401
PY
