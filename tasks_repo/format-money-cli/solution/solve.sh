#!/bin/bash
set -euo pipefail
cat > /app/fmt_money.py <<'PY'
import sys
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

if len(sys.argv) != 2:
    print("usage: fmt_money.py AMOUNT", file=sys.stderr)
    sys.exit(2)
try:
    amount = Decimal(sys.argv[1])
except InvalidOperation:
    print(f"not a number: {sys.argv[1]!r}", file=sys.stderr)
    sys.exit(2)
if not amount.is_finite():
    print(f"not a number: {sys.argv[1]!r}", file=sys.stderr)
    sys.exit(2)
cents = amount.quantize(Decimal("0.01"), ROUND_HALF_UP)
sign = "-" if cents < 0 else ""
print(f"{sign}${abs(cents):,.2f}")
PY
