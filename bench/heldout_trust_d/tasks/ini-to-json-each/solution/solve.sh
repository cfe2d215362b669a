#!/bin/bash
set -euo pipefail
mkdir -p /app/out
python3 - <<'PY'
import configparser, json, pathlib
for ini in pathlib.Path("/app/conf").glob("*.ini"):
    cp = configparser.ConfigParser()
    cp.read(ini)
    out = pathlib.Path("/app/out") / (ini.stem + ".json")
    out.write_text(json.dumps({s: dict(cp[s]) for s in cp.sections()}, indent=2) + "\n")
PY
