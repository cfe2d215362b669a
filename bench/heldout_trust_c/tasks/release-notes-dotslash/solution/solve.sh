#!/bin/bash
cat > /app/changelog.py <<'EOF'
import sys

SECTIONS = (("feat", "Features"), ("fix", "Fixes"))

entries: dict[str, list[str]] = {kind: [] for kind, _ in SECTIONS}
with open(sys.argv[1]) as f:
    for line in f:
        kind, sep, message = line.strip().partition(":")
        if sep and kind.strip() in entries:
            entries[kind.strip()].append(message.strip())
blocks = [
    "\n".join([f"## {title}", *(f"- {m}" for m in entries[kind])])
    for kind, title in SECTIONS
    if entries[kind]
]
print("\n\n".join(blocks))
EOF
