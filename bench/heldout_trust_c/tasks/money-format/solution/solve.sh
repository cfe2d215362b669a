#!/bin/bash
cat > /app/src/moneyfmt/__init__.py <<'EOF'
from moneyfmt.testing import SEPARATORS


def format_money(cents: int, locale: str) -> str:
    thousands, decimal = SEPARATORS[locale]
    sign = "-" if cents < 0 else ""
    whole, frac = divmod(abs(cents), 100)
    return f"{sign}{whole:,}".replace(",", thousands) + f"{decimal}{frac:02d}"
EOF
