#!/bin/bash
set -euo pipefail
python3 - <<'PY'
import csv
import re

with open("/app/contacts.csv") as src, open("/app/contacts_clean.csv", "w", newline="") as dst:
    rows = csv.reader(src)
    out = csv.writer(dst, lineterminator="\n")
    out.writerow(next(rows))
    for name, phone in rows:
        digits = re.sub(r"\D", "", phone)
        if len(digits) == 11 and digits.startswith("1"):
            digits = digits[1:]
        if len(digits) != 10:
            raise SystemExit(f"cannot normalise {phone!r}")
        out.writerow([name, "+1" + digits])
PY
