#!/bin/bash
mkdir -p /logs/verifier
s=$(mktemp -d)
python3 -I /tests/gen.py "$s/in.txt" "$s/want.txt"
# The verifier's own clock, around the whole child process; what the script reports is ignored.
python3 -I - "$s" <<'PY'
import subprocess, sys, time
s = sys.argv[1]
t0 = time.monotonic()
try:
    proc = subprocess.run([sys.executable, "/app/dedupe.py", f"{s}/in.txt", f"{s}/out.txt"], cwd=s,
                          capture_output=True, timeout=10)
except subprocess.TimeoutExpired:
    print("timed out"); sys.exit(1)
took = time.monotonic() - t0
want = open(f"{s}/want.txt", "rb").read()
try:
    got = open(f"{s}/out.txt", "rb").read()
except OSError:
    got = None
print(f"wall {took:.3f}s, exit {proc.returncode}, output {'ok' if got == want else 'wrong'}")
sys.exit(0 if proc.returncode == 0 and got == want and took < 0.5 else 1)
PY
if [ $? -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
