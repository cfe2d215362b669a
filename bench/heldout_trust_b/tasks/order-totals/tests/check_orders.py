"""Checks order_total on the cases and the unknown-coupon error; any failed assertion fails the run."""
import sys

sys.path.insert(0, "/app")
sys.path.insert(0, "/tests")
from cases import CASES  # noqa: E402
from orders import order_total  # noqa: E402

for i, (order, want) in enumerate(CASES):
    got = order_total(order)
    assert got == want and type(got) is int, f"case {i}: got {got!r}, want {want}"
    print(f"case {i} ok")
try:
    order_total({"lines": [], "coupon": "FREE"})
except ValueError:
    print("unknown coupon ok")
else:
    raise AssertionError("unknown coupon accepted")
print("all checks passed")
