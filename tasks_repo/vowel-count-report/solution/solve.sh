#!/bin/bash
set -euo pipefail
python3 - <<'PY'
import json

text = open("/app/text.txt", encoding="utf-8").read().lower()
json.dump({v: text.count(v) for v in "aeiou"}, open("/app/vowels.json", "w"))
PY
