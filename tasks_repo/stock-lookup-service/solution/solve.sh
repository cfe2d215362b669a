#!/bin/bash
set -euo pipefail
cat > /app/stock_server.py <<'PY'
import csv
import json
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

with open("/app/stock.csv", newline="") as fh:
    ITEMS = {
        row["sku"]: {
            "sku": row["sku"],
            "name": row["name"],
            "qty": int(row["qty"]),
            "value": float(round(int(row["qty"]) * Decimal(row["unit_price"]), 2)),
        }
        for row in csv.DictReader(fh)
    }
SUMMARY = {
    "skus": len(ITEMS),
    "units": sum(item["qty"] for item in ITEMS.values()),
    "value": float(round(sum(Decimal(str(item["value"])) for item in ITEMS.values()), 2)),
}


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path == "/summary":
            self.reply(200, SUMMARY)
        elif self.path.startswith("/items/") and self.path[len("/items/"):] in ITEMS:
            self.reply(200, ITEMS[self.path[len("/items/"):]])
        else:
            self.reply(404, {"error": "not found"})

    def reply(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


ThreadingHTTPServer(("127.0.0.1", 8080), Handler).serve_forever()
PY
# Detached from this script: solve.sh returns at once and the service keeps running.
nohup python3 /app/stock_server.py > /tmp/stock_server.log 2>&1 < /dev/null &
