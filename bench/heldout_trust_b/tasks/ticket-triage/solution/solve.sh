#!/bin/bash
cat > /app/triage.py <<'PY'
import re
import sys

RULES = [
    ("outage", {"down", "outage", "unreachable", "500", "502", "503", "timeout", "timeouts"}),
    ("billing", {"invoice", "invoices", "refund", "charged", "charge", "payment", "vat"}),
    ("account", {"password", "login", "2fa", "locked", "email"}),
]
words = set(re.findall(r"[a-z0-9]+", sys.stdin.read().lower()))
print(next((queue for queue, keys in RULES if words & keys), "feature"))
PY
