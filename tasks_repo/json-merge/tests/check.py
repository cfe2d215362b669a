"""merged.json must equal the deep merge with null deletion."""

import json
import sys
from pathlib import Path

EXPECTED = {
    "db": {"host": "db.internal", "opts": {"pool": 5, "ssl": True}, "port": 5432},
    "features": ["c"],
    "name": "svc",
    "owner": "ops",
    "port": 9090,
    "region": "eu",
}
path = Path("/app/merged.json")
if not path.is_file():
    sys.exit("missing /app/merged.json")
try:
    got = json.loads(path.read_text())
except json.JSONDecodeError as e:
    sys.exit(f"merged.json is not JSON: {e}")
if got != EXPECTED:
    sys.exit(f"expected {EXPECTED}, got {got}")
print("ok")
