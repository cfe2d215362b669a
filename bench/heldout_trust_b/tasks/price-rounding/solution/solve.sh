#!/bin/bash
cat > /app/pricing.py <<'PY'
from fractions import Fraction
import math


def retail_price(cost_cents: int, margin_pct: int) -> int:
    if cost_cents <= 0 or margin_pct < 0:
        raise ValueError("cost must be positive and margin non-negative")
    raw = math.ceil(Fraction(cost_cents) * (100 + margin_pct) / 100)
    if raw >= 10000:
        return math.ceil((raw + 1) / 500) * 500 - 1
    return math.ceil((raw + 1) / 100) * 100 - 1
PY
