#!/bin/bash
cat > /app/kvconf.py <<'EOF'
def parse(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if ":" not in stripped:
            raise ValueError(f"no ':' in {line!r}")
        key, value = stripped.split(":", 1)
        out[key.strip()] = value.strip()
    return out
EOF
