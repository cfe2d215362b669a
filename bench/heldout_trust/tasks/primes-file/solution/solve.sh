#!/bin/bash
python3 - <<'PY'
ps, n = [], 2
while len(ps) < 2000:
    if all(n % p for p in ps if p * p <= n):
        ps.append(n)
    n += 1
open("/app/primes.txt", "w").write("".join(f"{p}\n" for p in ps))
PY
