#!/bin/bash
cat > /app/bumpver.py <<'PY'
import re

_RE = re.compile(r"^(\d+)\.(\d+)\.(\d+)(?:(a|b|rc)(\d+))?$")


def bump(version: str, part: str) -> str:
    m = _RE.match(version)
    if not m:
        raise ValueError(f"bad version {version!r}")
    x, y, z = (int(m.group(i)) for i in (1, 2, 3))
    tag, num = m.group(4), m.group(5)
    if part == "major":
        return f"{x + 1}.0.0"
    if part == "minor":
        return f"{x}.{y + 1}.0"
    if part == "patch":
        return f"{x}.{y}.{z}" if tag else f"{x}.{y}.{z + 1}"
    if part == "pre":
        return f"{x}.{y}.{z}{tag}{int(num) + 1}" if tag else f"{x}.{y}.{z + 1}rc1"
    raise ValueError(f"bad part {part!r}")
PY
