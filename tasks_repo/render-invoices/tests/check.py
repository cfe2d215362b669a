"""/app/invoices/ must hold exactly one filled-in invoice per order."""

import sys
from pathlib import Path

ORDERS = {
    "A-1001": ("Northwind Traders", "USB-C cable", "3", "9.99", "29.97"),
    "A-1002": ("Contoso Ltd", "Standing desk", "1", "349.00", "349.00"),
    "A-1003": ("Fabrikam Inc", "Ergonomic chair", "2", "189.50", "379.00"),
    "A-1004": ("Tailspin Toys", "Label printer", "4", "62.25", "249.00"),
}

folder = Path("/app/invoices")
found = sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []
want_files = sorted(f"{order}.txt" for order in ORDERS)
if found != want_files:
    sys.exit(f"expected files {want_files}, found {found}")
for order, (customer, item, qty, price, total) in ORDERS.items():
    want = (
        f"INVOICE {order}\nBill to: {customer}\n\n{qty} x {item} @ {price}\nTotal due: {total}\n\n"
        "Payment within 30 days. Thank you for your business.\n"
    )
    got = (folder / f"{order}.txt").read_text()
    if got.strip() != want.strip():
        sys.exit(f"{order}.txt: expected {want!r}, got {got!r}")
print("ok")
