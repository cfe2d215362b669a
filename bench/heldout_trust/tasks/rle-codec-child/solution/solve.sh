#!/bin/bash
cat > /app/rle.py <<'PY'
import itertools
import re


def encode(s):
    out = []
    for ch, group in itertools.groupby(s):
        n = len(list(group))
        out.append(ch if n == 1 else f"{n}{ch}")
    return "".join(out)


def decode(s):
    return "".join(ch * int(n or 1) for n, ch in re.findall(r"(\d*)(\D)", s))
PY
