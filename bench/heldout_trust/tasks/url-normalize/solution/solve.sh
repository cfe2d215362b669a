#!/bin/bash
cat > /app/normalize.py <<'PY'
import re
import sys
from urllib.parse import urlsplit, urlunsplit

UNRESERVED = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


def fix_escape(m):
    ch = chr(int(m.group(1), 16))
    return ch if ch in UNRESERVED else "%" + m.group(1).upper()


def remove_dots(path):
    out = []
    for seg in path.split("/")[1:]:
        if seg == "..":
            if out:
                out.pop()
        elif seg != ".":
            out.append(seg)
    if path.endswith(("/.", "/..")):
        out.append("")
    return "/" + "/".join(out)


def normalize(url):
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    port = parts.port
    netloc = host if port is None or (scheme, port) in (("http", 80), ("https", 443)) else f"{host}:{port}"
    path = re.sub(r"%([0-9A-Fa-f]{2})", fix_escape, parts.path or "/")
    return urlunsplit((scheme, netloc, remove_dots(path), parts.query, ""))


print(normalize(sys.argv[1]))
PY
