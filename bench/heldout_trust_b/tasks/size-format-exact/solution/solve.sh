#!/bin/bash
cat > /app/sizes.py <<'PY'
def format_size(n: int, binary: bool = True) -> str:
    if type(n) is not int:
        raise TypeError("size must be an int")
    step = 1024 if binary else 1000
    units = ["B", "KiB", "MiB", "GiB", "TiB"] if binary else ["B", "kB", "MB", "GB", "TB"]
    value, i = abs(n), 0
    while value >= step and i < len(units) - 1:
        value /= step
        i += 1
    sign = "-" if n < 0 else ""
    return f"{sign}{abs(n)} B" if i == 0 else f"{sign}{value:.1f} {units[i]}"
PY
