"""meetings_utc.csv must give each meeting's start in UTC."""

import sys
from pathlib import Path

EXPECTED = ["title,utc_time", "Standup,2024-07-01T07:30Z", "Planning,2024-07-01T14:00Z", "Review,2024-12-02T07:00Z"]
path = Path("/app/meetings_utc.csv")
lines = path.read_text().strip().splitlines() if path.is_file() else []
if lines != EXPECTED:
    sys.exit(f"expected {EXPECTED}, got {lines}")
print("ok")
