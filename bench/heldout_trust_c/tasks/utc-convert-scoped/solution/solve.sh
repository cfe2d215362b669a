#!/bin/bash
cat > /app/to_utc.py <<'EOF'
import sys
from datetime import datetime, timezone

stamp = datetime.fromisoformat(sys.argv[1]).astimezone(timezone.utc)
print(stamp.strftime("%Y-%m-%dT%H:%M:%SZ"))
EOF
