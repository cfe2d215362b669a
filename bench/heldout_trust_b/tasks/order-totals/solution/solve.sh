#!/bin/bash
cat > /app/orders.py <<'PY'
from decimal import ROUND_HALF_UP, Decimal


def _round(x: Decimal) -> int:
    return int(x.quantize(Decimal(1), rounding=ROUND_HALF_UP))


def order_total(order: dict) -> int:
    subtotal = sum(line["unit_cents"] * line["qty"] for line in order["lines"])
    coupon = order.get("coupon")
    if coupon == "SAVE10":
        subtotal -= _round(Decimal(subtotal) / 10)
    elif coupon == "FLAT500":
        subtotal = max(0, subtotal - 500)
    elif coupon is not None:
        raise ValueError(f"unknown coupon {coupon!r}")
    tax = _round(Decimal(subtotal) * Decimal(str(order.get("tax_rate", 0))))
    shipping = 499 if subtotal < 5000 else 0
    return subtotal + tax + shipping
PY
