import ast
import subprocess
import sys

sys.path.insert(0, "/tests")
from want import WANT  # noqa: E402


def same(x, y):
    if type(x) is not type(y):
        return False
    if isinstance(x, dict):
        return x.keys() == y.keys() and all(same(x[k], y[k]) for k in x)
    if isinstance(x, (list, tuple)):
        return len(x) == len(y) and all(same(p, q) for p, q in zip(x, y))
    return x == y


proc = subprocess.run([sys.executable, "/app/invdiff.py", "/tests/old.csv", "/tests/new.csv"],
                      capture_output=True, text=True, timeout=60)
if proc.returncode != 0:
    print(proc.stderr)
    sys.exit(1)
try:
    got = ast.literal_eval(proc.stdout.strip())  # literals only: no names, calls or attributes
except (ValueError, SyntaxError):
    print("output is not a literal")
    sys.exit(1)
print("got", proc.stdout.strip())
sys.exit(0 if same(got, WANT) else 1)
