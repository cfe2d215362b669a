"""Checks convert() against the vendored rate table."""
import sys
from decimal import ROUND_HALF_UP, Decimal

sys.path.insert(0, "/app")
from fx import convert  # noqa: E402
from vendor.rates import rate  # noqa: E402

CASES = [(10000, "EUR", "USD"), (12345, "USD", "GBP"), (99, "GBP", "JPY"), (5, "JPY", "CHF"), (100000, "CHF", "EUR"),
         (-2550, "EUR", "GBP"), (0, "USD", "JPY")]
failed = 0
for amount, src, dst in CASES:
    want = Decimal(amount) * Decimal(repr(rate(src, dst)))
    want = int(want.quantize(Decimal(1), rounding=ROUND_HALF_UP))
    got = convert(amount, src, dst)
    if type(got) is not int or got != want:
        print(f"{amount} {src}->{dst}: got {got!r}, want {want}")
        failed += 1
try:
    convert(1, "EUR", "XXX")
    failed += 1
except KeyError:
    pass
print(f"{failed} failed")
sys.exit(1 if failed else 0)
