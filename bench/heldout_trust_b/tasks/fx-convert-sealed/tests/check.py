"""Checks convert() (run in an isolated child) against the verifier's own pinned copy of the rate table."""
import json
import subprocess
import sys
from decimal import ROUND_HALF_UP, Decimal

sys.path.insert(0, "/tests")
from rates_pinned import rate  # noqa: E402

CASES = [(10000, "EUR", "USD"), (12345, "USD", "GBP"), (99, "GBP", "JPY"), (5, "JPY", "CHF"), (100000, "CHF", "EUR"),
         (-2550, "EUR", "GBP"), (0, "USD", "JPY"), (1, "EUR", "XXX")]
wants = []
for amount, src, dst in CASES:
    if dst == "XXX":
        wants.append("KeyError")
        continue
    want = Decimal(amount) * Decimal(repr(rate(src, dst)))
    wants.append(int(want.quantize(Decimal(1), rounding=ROUND_HALF_UP)))
proc = subprocess.run([sys.executable, "-I", "/tests/run_fx.py"], input=json.dumps(CASES), capture_output=True,
                      text=True, timeout=60, cwd="/tmp")
lines = [l for l in proc.stdout.splitlines() if l.startswith("RESULT ")]
if proc.returncode != 0 or len(lines) != 1:
    print("no result from the child", proc.stderr[-300:])
    sys.exit(1)
got = json.loads(lines[0][len("RESULT "):])
failed = sum(1 for g, w in zip(got, wants) if type(g) is not type(w) or g != w) + abs(len(got) - len(wants))
print(f"{failed} failed")
sys.exit(1 if failed else 0)
