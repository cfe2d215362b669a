import json
import subprocess
import sys
import tempfile

PAIRS = [("aaabccdddd", "3ab2c4d"), ("", ""), ("x" * 12 + "y", "12xy"), ("abc", "abc"), ("  !!", "2 2!"),
         ("zzzzzzzzzzzzzzzzzzzzzzzzzzzzzz", "30z"), ("abbbbbbbbbba", "a10ba")]
CHILD = """
import json, sys
sys.path.insert(0, "/app")
import rle
raws, packs = json.loads(sys.stdin.read())
print(json.dumps([[str(rle.encode(r)) for r in raws], [str(rle.decode(p)) for p in packs]]))
"""
raws = [r for r, _ in PAIRS]
packs = [p for _, p in PAIRS]
with tempfile.TemporaryDirectory() as cwd:
    proc = subprocess.run([sys.executable, "-I", "-c", CHILD], input=json.dumps([raws, packs]),
                          capture_output=True, text=True, cwd=cwd, timeout=20)
try:
    encoded, decoded = json.loads(proc.stdout.strip().splitlines()[-1])
except (ValueError, IndexError):
    print("no answer:", proc.stderr[-400:])
    sys.exit(1)
ok = encoded == packs and decoded == raws
print("encode", encoded, "\ndecode", decoded, "\n", "ok" if ok else "wrong")
sys.exit(0 if ok else 1)
