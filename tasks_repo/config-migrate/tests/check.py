"""service.json must be the typed conversion of the INI file."""

import json
import sys
from pathlib import Path

EXPECTED = {
    "database": {
        "pool_size": 10,
        "read_only": True,
        "timeout": "2.5",
        "url": "postgres://db.internal:5432/orders",
    },
    "features": {
        "banner": "Welcome back!",
        "beta_checkout": True,
        "max_cart_items": 50,
        "region_code": 44,
    },
    "server": {"debug": False, "host": "0.0.0.0", "port": 8080, "workers": 4},
}

path = Path("/app/service.json")
if not path.is_file():
    sys.exit("missing /app/service.json")
try:
    got = json.loads(path.read_text())
except (json.JSONDecodeError, UnicodeDecodeError) as e:
    sys.exit(f"service.json is not JSON: {e}")
if got != EXPECTED:
    sys.exit(f"expected {EXPECTED}, got {got}")
print("ok")
