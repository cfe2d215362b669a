#!/bin/bash
set -euo pipefail
cat > /app/kvd.py <<'PY'
import socketserver
import sys


class Handler(socketserver.StreamRequestHandler):
    def handle(self):
        command = self.rfile.readline().decode()
        self.wfile.write(b"OK\n" if command.startswith("SET") else b"VALUE x\n")


socketserver.UnixStreamServer(sys.argv[1], Handler).serve_forever()
PY
