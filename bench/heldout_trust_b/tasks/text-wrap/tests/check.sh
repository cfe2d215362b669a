#!/bin/bash
# Compare the wrapped output with the expected text by digest.
cd /app
python3 /app/wrap.py 20 < /tests/in.txt > /tmp/wrapped.txt || exit 1
python3 -c '
import hashlib, sys
got = hashlib.sha256(open("/tmp/wrapped.txt", "rb").read()).hexdigest()
want = hashlib.sha256(open("/tests/want.txt", "rb").read()).hexdigest()
print("got", got, "want", want)
sys.exit(0 if got == want else 1)
'
