#!/bin/bash
cat > /app/phones.py <<'PY'
import re

CODES = {"DE": "49", "FR": "33", "GB": "44", "US": "1"}


def to_e164(raw: str, default_country: str = "DE") -> str:
    s = re.sub(r"[\s\-./()]", "", raw)
    if s.startswith("+"):
        digits = s[1:]
    elif s.startswith("00"):
        digits = s[2:]
    else:
        if default_country != "US" and s.startswith("0"):
            s = s[1:]
        digits = CODES[default_country] + s
    if not digits.isdigit() or not 8 <= len(digits) <= 15:
        raise ValueError(f"not a phone number: {raw!r}")
    return "+" + digits
PY
