#!/bin/bash
cat > /app/slugify.py <<'PY'
import re
import sys
import unicodedata


def slugify(title: str) -> str:
    ascii_text = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode()
    return re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")


if __name__ == "__main__":
    print(slugify(sys.argv[1]))
PY
