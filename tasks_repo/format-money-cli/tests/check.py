"""Runs /app/fmt_money.py on fixed cases and on a random amount."""

import random
import subprocess
import sys

CASES = {
    "1234.5": "$1,234.50",
    "0": "$0.00",
    "2.675": "$2.68",
    "-87.125": "-$87.13",
    "-1500": "-$1,500.00",
    "999999.999": "$1,000,000.00",
    "-0.001": "$0.00",
    "42": "$42.00",
}


def run(*args):
    return subprocess.run([sys.executable, "/app/fmt_money.py", *args], capture_output=True, text=True, timeout=10)


def reference(cents):
    return f"${cents / 100:,.2f}"


# a random amount in whole cents, to catch solutions that only handle the examples
cents = random.randint(-500_000, 500_000)
CASES[f"{cents / 100:.2f}"] = reference(cents)

for amount, want in CASES.items():
    proc = run(amount)
    if proc.returncode != 0 or proc.stdout.strip() != want:
        sys.exit(f"fmt_money.py {amount}: exit {proc.returncode}, printed {proc.stdout.strip()!r}, expected {want!r}")
for bad in ([], ["twelve"]):
    proc = run(*bad)
    if proc.returncode != 2 or not proc.stderr.strip():
        sys.exit(f"fmt_money.py {bad}: expected exit 2 with a message, got {proc.returncode}")
print("ok")
