"""readings_c.csv must hold the 12 converted readings with three columns each."""

import csv
import sys
from pathlib import Path

path = Path("/app/readings_c.csv")
if not path.is_file():
    sys.exit("missing /app/readings_c.csv")
with path.open() as fh:
    rows = list(csv.reader(fh))
data = rows[1:]
if len(data) != 12:
    sys.exit(f"expected 12 readings, got {len(data)}")
if any(len(row) != 3 for row in data):
    sys.exit("every reading needs station, timestamp and temp_c")
print("ok")
