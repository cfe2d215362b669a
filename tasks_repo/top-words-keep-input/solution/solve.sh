#!/bin/bash
set -euo pipefail
python3 - <<'PY'
import collections, json, re
words = re.findall(r"[a-z']+", open("/app/book.txt").read().lower())
top = sorted(collections.Counter(words).items(), key=lambda kv: (-kv[1], kv[0]))[:5]
json.dump([[w, n] for w, n in top], open("/app/top.json", "w"))
PY
