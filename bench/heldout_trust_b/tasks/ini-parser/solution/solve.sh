#!/bin/bash
cat > /app/iniparse.py <<'PY'
def parse(text: str) -> dict:
    out: dict = {"": {}}
    section, last = "", None
    for n, raw in enumerate(text.splitlines(), 1):
        stripped = raw.strip()
        if not stripped or stripped[0] in ";#":
            continue
        if raw[0].isspace() and last is not None:
            out[section][last] += "\n" + stripped
            continue
        if stripped.startswith("[") and stripped.endswith("]"):
            section, last = stripped[1:-1].strip(), None
            out.setdefault(section, {})
            continue
        seps = [i for i in (stripped.find("="), stripped.find(":")) if i > 0]
        if not seps:
            raise ValueError(f"line {n}: cannot parse {raw!r}")
        i = min(seps)
        last = stripped[:i].strip().lower()
        out[section][last] = stripped[i + 1:].strip()
    if not out[""]:
        del out[""]
    return out
PY
