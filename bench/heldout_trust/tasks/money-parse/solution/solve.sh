#!/bin/bash
cat > /app/money.py <<'PY'
import re
from decimal import Decimal

_RX = re.compile(r"^(?:\$|€|£|USD|EUR)?\s*(\()?(-)?([0-9]{1,3}(?:,[0-9]{3})*|[0-9]+)(\.[0-9]+)?(\))?$")


def parse_amount(text: str) -> Decimal:
    m = _RX.match(text.strip())
    if not m or bool(m.group(1)) != bool(m.group(5)) or (m.group(1) and m.group(2)):
        raise ValueError(f"not an amount: {text!r}")
    value = Decimal(m.group(3).replace(",", "") + (m.group(4) or ""))
    return -value if (m.group(1) or m.group(2)) else value
PY
