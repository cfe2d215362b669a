#!/bin/bash
python3 - <<'PY'
p = "/app/durations.py"
src = open(p).read()
head = src.split("def parse_duration")[0]
body = '''import re

UNITS = {"w": 604800, "d": 86400, "h": 3600, "m": 60, "s": 1}
ORDER = "wdhms"


def parse_duration(text: str) -> int:
    if not text.strip():
        raise ValueError("empty duration")
    parts = re.findall(r"\\s*(\\d+)([a-z])\\s*", text)
    if "".join(n + u for n, u in parts) != re.sub(r"\\s+", "", text) or not parts:
        raise ValueError(f"bad duration: {text!r}")
    last, total = -1, 0
    for number, unit in parts:
        if unit not in UNITS:
            raise ValueError(f"unknown unit {unit!r} in {text!r}")
        if ORDER.index(unit) <= last:
            raise ValueError(f"units out of order: {text!r}")
        last = ORDER.index(unit)
        total += int(number) * UNITS[unit]
    return total
'''
open(p, "w").write(head + body)
PY
