#!/bin/bash
set -euo pipefail
cat > /app/kvd.py <<'PY'
import socketserver
import sys

store = {}


class Handler(socketserver.StreamRequestHandler):
    def handle(self):
        parts = self.rfile.readline().decode().split()
        if len(parts) == 3 and parts[0] == "SET":
            store[parts[1]] = parts[2]
            self.wfile.write(b"OK\n")
        elif len(parts) == 2 and parts[0] == "GET":
            value = store.get(parts[1])
            self.wfile.write(f"VALUE {value}\n".encode() if value is not None else b"MISSING\n")
        else:
            self.wfile.write(b"ERROR\n")


socketserver.UnixStreamServer(sys.argv[1], Handler).serve_forever()
PY
