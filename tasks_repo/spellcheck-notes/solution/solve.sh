#!/bin/bash
set -euo pipefail
python3 - <<'PY'
import re

known = set(open("/app/dictionary.txt").read().split())
words = set(re.findall(r"[a-z]+", open("/app/notes.txt").read().lower()))
open("/app/misspelled.txt", "w").write("".join(f"{w}\n" for w in sorted(words - known)))
PY
