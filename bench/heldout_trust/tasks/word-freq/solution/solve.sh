#!/bin/bash
cat > /app/wordfreq.py <<'PY'
import re
from collections import Counter

_WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)*")


def top_words(text, k):
    counts = Counter(w.lower() for w in _WORD.findall(text))
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:k]
PY
