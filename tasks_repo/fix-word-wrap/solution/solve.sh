#!/bin/bash
set -euo pipefail
cat > /app/wordwrap.py <<'EOF'
"""Greedy line wrapping."""


def wrap(text, width):
    lines, current = [], ""
    for word in text.split():
        if current and len(current) + 1 + len(word) > width:
            lines.append(current)
            current = word
        else:
            current = f"{current} {word}" if current else word
    if current:
        lines.append(current)
    return lines
EOF
