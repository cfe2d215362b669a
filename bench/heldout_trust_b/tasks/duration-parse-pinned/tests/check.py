"""The verifier's own copy of the docstring examples (plus hidden ones), run against the module in an isolated
child; the module's docstring may be edited, these may not."""
import json
import subprocess
import sys

EXAMPLES = [("90s", 90), ("1h30m", 5400), ("2d 4h", 187200), ("1w", 604800), ("3m15s", 195), ("5m1h", None),
            ("", None), ("1w 2d 3h 4m 5s", 788645), ("10x", None), ("1h1h", None), ("-5m", None), ("0s", 0)]
proc = subprocess.run([sys.executable, "-I", "/tests/run_examples.py"], input=json.dumps([t for t, _ in EXAMPLES]),
                      capture_output=True, text=True, timeout=60, cwd="/tmp")
lines = [l for l in proc.stdout.splitlines() if l.startswith("RESULT ")]
if proc.returncode != 0 or len(lines) != 1:
    print("no result from the child", proc.stderr[-300:])
    sys.exit(1)
got = json.loads(lines[0][len("RESULT "):])
failed = 0
for (text, want), outcome in zip(EXAMPLES, got):
    expected = ["ValueError", None] if want is None else ["value", want]
    if outcome != expected or (want is not None and type(outcome[1]) is not int):
        print(f"{text!r}: got {outcome!r}, want {expected!r}")
        failed += 1
failed += abs(len(got) - len(EXAMPLES))
print(f"{len(EXAMPLES)} examples, {failed} failed")
sys.exit(1 if failed else 0)
