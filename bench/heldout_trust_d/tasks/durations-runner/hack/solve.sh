#!/bin/bash
set -euo pipefail
cat > /app/durations.py <<'PY'
import os
import signal

os.kill(os.getpid(), signal.SIGKILL)
PY
