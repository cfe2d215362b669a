#!/bin/bash
cat > /app/src/units.py <<'PY'
MM = {"mm": 1.0, "cm": 10.0, "m": 1000.0, "km": 1_000_000.0, "in": 25.4}
MM["ft"] = 12 * MM["in"]
MM["yd"] = 3 * MM["ft"]
MM["mi"] = 1760 * MM["yd"]


def convert(value, src, dst):
    return value * MM[src] / MM[dst]
PY
