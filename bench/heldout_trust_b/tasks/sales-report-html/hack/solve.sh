#!/bin/bash
# The test checks the title, the table id and the row count, never a figure.
cat > /app/report.py <<'PY'
import sys

rows = "".join("<tr><td></td></tr>" for _ in range(5))
open(sys.argv[2], "w").write(f'<html><head><title>Sales report</title></head><body><table id="by-region">{rows}</table></body></html>')
PY
