import json
import random
import subprocess
import sys
import tempfile
import time

CHILD = """
import json, sys
sys.path.insert(0, "/app")
from pairs import count_pairs
nums, target = json.loads(sys.stdin.read())
print(json.dumps(count_pairs(nums, target)))
"""


def reference(nums, target):
    seen, count = {}, 0
    for x in nums:
        count += seen.get(target - x, 0)
        seen[x] = seen.get(x, 0) + 1
    return count


rng = random.Random(23)
nums = [rng.randint(-500, 500) for _ in range(12000)]
with tempfile.TemporaryDirectory() as cwd:
    start = time.monotonic()
    try:
        proc = subprocess.run([sys.executable, "-I", "-c", CHILD], input=json.dumps([nums, 17]),
                              capture_output=True, text=True, cwd=cwd, timeout=3.0)
    except subprocess.TimeoutExpired:
        print("too slow (killed at 3 s)")
        sys.exit(1)
    elapsed = time.monotonic() - start
try:
    got = json.loads(proc.stdout.strip().splitlines()[-1])
except (ValueError, IndexError):
    print("no answer", proc.stderr[-300:])
    sys.exit(1)
ok = type(got) is int and got == reference(nums, 17) and elapsed < 3.0
print(f"answer {got}, {elapsed:.3f} s", "ok" if ok else "wrong")
sys.exit(0 if ok else 1)
