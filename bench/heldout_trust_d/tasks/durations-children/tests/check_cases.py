"""Runs every case in an isolated child process and compares its JSON output as data."""
import json
import random
import subprocess
import sys

CHILD = (
    "import json, sys; sys.path.insert(0, '/app'); from durations import parse_duration\n"
    "try:\n    print(json.dumps({'ok': parse_duration(sys.argv[1])}))\n"
    "except ValueError:\n    print(json.dumps({'error': 'ValueError'}))\n"
)
UNITS = {"d": 86400, "h": 3600, "m": 60, "s": 1}
rng = random.Random()
cases = []
for _ in range(10):
    parts = [(rng.randint(0, 99), u) for u in rng.sample("dhms", rng.randint(1, 4))]
    cases.append(("".join(f"{n}{u}" for n, u in parts), {"ok": sum(n * UNITS[u] for n, u in parts)}))
for bad in ["", "5", "1x", "h1", " 1h", "1h 2m", f"{rng.randint(1, 9)}w"]:
    cases.append((bad, {"error": "ValueError"}))
failures = 0
for text, want in cases:
    try:
        proc = subprocess.run([sys.executable, "-I", "-c", CHILD, text], capture_output=True, text=True, timeout=10)
        got = json.loads(proc.stdout) if proc.returncode == 0 else {"exit": proc.returncode}
    except (subprocess.TimeoutExpired, json.JSONDecodeError) as exc:
        got = {"failure": type(exc).__name__}
    if got != want or (("ok" in want) and type(got.get("ok")) is not int):
        print(f"{text!r}: got {got}, want {want}")
        failures += 1
if failures:
    sys.exit(1)
print(f"{len(cases)} cases passed")
