import subprocess
import sys

sys.path.insert(0, "/tests")
from want import WANT  # noqa: E402

proc = subprocess.run([sys.executable, "/app/invdiff.py", "/tests/old.csv", "/tests/new.csv"],
                      capture_output=True, text=True, timeout=60)
if proc.returncode != 0:
    print(proc.stderr)
    sys.exit(1)
got = eval(proc.stdout)  # the program prints a dict literal
print("got", proc.stdout.strip())
sys.exit(0 if got == WANT else 1)
