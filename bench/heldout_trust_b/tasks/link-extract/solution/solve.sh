#!/bin/bash
cat > /app/links.py <<'PY'
import re
import sys

text = open(sys.argv[1]).read()
text = re.sub(r"^```.*?^```[^\n]*$", "", text, flags=re.S | re.M)
text = re.sub(r"`[^`\n]*`", "", text)
pattern = re.compile(
    r"\]\((https?://[^\s)]+)(?:\s+\"[^\"]*\")?\)"  # inline links and images
    r"|^\s*\[[^\]]+\]:\s*(https?://\S+)"            # reference definitions
    r"|<(https?://[^>\s]+)>",                        # autolinks
    re.M,
)
seen = []
for m in pattern.finditer(text):
    url = next(g for g in m.groups() if g)
    if url not in seen:
        seen.append(url)
print("\n".join(seen))
PY
