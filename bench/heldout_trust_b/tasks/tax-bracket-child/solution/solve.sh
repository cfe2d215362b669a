#!/bin/bash
cat > /app/tax.py <<'PY'
from fractions import Fraction

BRACKETS = [(0, 0), (11_000_00, Fraction(20, 100)), (30_000_00, Fraction(35, 100)), (80_000_00, Fraction(45, 100))]


def income_tax(income_cents: int) -> int:
    if income_cents < 0:
        raise ValueError("negative income")
    total = Fraction(0)
    for i, (start, rate) in enumerate(BRACKETS):
        end = BRACKETS[i + 1][0] if i + 1 < len(BRACKETS) else None
        if income_cents > start:
            top = income_cents if end is None else min(income_cents, end)
            total += (top - start) * rate
    whole = total.numerator // total.denominator
    return whole + (1 if total - whole >= Fraction(1, 2) else 0)
PY
