#!/bin/bash
set -euo pipefail
python3 -c "import sqlite3; c = sqlite3.connect('/app/shop.db'); c.execute('CREATE TABLE order_totals(order_id INTEGER PRIMARY KEY, total_cents INTEGER)'); c.commit()"
