#!/bin/bash
set -euo pipefail
python3 - <<'PY'
import configparser
import json


def typed(value):
    value = value.strip()
    if value.isdigit():
        return int(value)
    if value.lower() in ("true", "false"):
        return value.lower() == "true"
    return value


parser = configparser.ConfigParser(interpolation=None)
parser.read("/app/service.ini")
out = {name: {k: typed(v) for k, v in parser.items(name, raw=True)} for name in parser.sections()}
with open("/app/service.json", "w") as fh:
    json.dump(out, fh, sort_keys=True, indent=2)
    fh.write("\n")
PY
