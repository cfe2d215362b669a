#!/bin/bash
cat > /app/hexdump.py <<'PY'
def hexdump(data: bytes) -> str:
    lines = []
    for off in range(0, len(data), 16):
        chunk = data[off : off + 16]
        left = " ".join(f"{b:02x}" for b in chunk[:8])
        right = " ".join(f"{b:02x}" for b in chunk[8:])
        hexpart = f"{left:<23}  {right:<23}"
        text = "".join(chr(b) if 0x20 <= b <= 0x7E else "." for b in chunk)
        lines.append(f"{off:08x}  {hexpart}  |{text}|\n")
    lines.append(f"{len(data):08x}\n")
    return "".join(lines)
PY
