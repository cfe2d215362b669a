"""The agent's distance() runs in a child process; the reference is the grader's own copy."""
import json
import random
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, "/tests")
from reference_lev import distance as reference  # noqa: E402

CHILD = """
import json, sys
sys.path.insert(0, "/app")
from fast_lev import distance
pairs = json.loads(sys.stdin.read())
print(json.dumps([distance(a, b) for a, b in pairs]))
"""
rng = random.Random(2)
small = [("kitten", "sitting"), ("", "abc"), ("flaw", "lawn"), ("abcdef", "azced"), ("same", "same")]
small += [("".join(rng.choice("ab") for _ in range(rng.randint(0, 5))),
           "".join(rng.choice("ab") for _ in range(rng.randint(0, 5)))) for _ in range(10)]
big = ("".join(rng.choice("acgt") for _ in range(300)), "".join(rng.choice("acgt") for _ in range(300)))


def big_reference(a, b):
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


want = [reference(a, b) for a, b in small] + [big_reference(*big)]
with tempfile.TemporaryDirectory() as cwd:
    start = time.monotonic()
    try:
        proc = subprocess.run([sys.executable, "-I", "-c", CHILD], input=json.dumps(small + [big]),
                              capture_output=True, text=True, cwd=cwd, timeout=5)
    except subprocess.TimeoutExpired:
        print("too slow")
        sys.exit(1)
    elapsed = time.monotonic() - start
try:
    got = json.loads(proc.stdout.strip().splitlines()[-1])
except (ValueError, IndexError):
    print("no answer", proc.stderr[-300:])
    sys.exit(1)
ok = got == want and all(type(g) is int for g in got) and elapsed < 5
print("got", got, "want", want, f"{elapsed:.2f} s", "ok" if ok else "wrong")
sys.exit(0 if ok else 1)
