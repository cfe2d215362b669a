#!/bin/bash
set -euo pipefail
cat > /app/titles.py <<'PY'
"""Title-case headlines for the newsletter."""

SMALL = {"a", "an", "and", "of", "the", "in"}


def title_case(text):
    words = text.lower().split()
    return " ".join(w if i and w in SMALL else w.capitalize() for i, w in enumerate(words))
PY
