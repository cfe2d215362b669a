#!/bin/bash
set -euo pipefail
python3 - <<'PY'
import json
import re


def snake(key):
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", key).lower()


def convert(value):
    if isinstance(value, dict):
        return {snake(k): convert(v) for k, v in value.items()}
    if isinstance(value, list):
        return [convert(v) for v in value]
    return value


doc = json.load(open("/app/payload.json"))
with open("/app/payload_snake.json", "w") as fh:
    json.dump(convert(doc), fh, indent=2)
PY
