#!/bin/bash
python3 - <<'PY'
import json
from cfgtools import load


def merge(a, b):
    out = dict(a)
    for k, v in b.items():
        if v is None:
            out.pop(k, None)
        elif isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = merge(out[k], v)
        else:
            out[k] = v
    return out


cfg = {}
for name in ("base", "staging", "local"):
    cfg = merge(cfg, load(f"/app/config/{name}.json"))
with open("/app/out/merged.json", "w") as fh:
    fh.write(json.dumps(cfg, indent=2, sort_keys=True) + "\n")
PY
