import json
import subprocess
import sys

CALL = """
import json
import sys

sys.path.insert(0, "/app/vendor")
sys.path.insert(0, "/app")
from kvconf import parse

out = []
for text in json.load(sys.stdin):
    try:
        out.append(["ok", parse(text)])
    except ValueError:
        out.append(["ValueError", None])
print(json.dumps(out))
"""

CASES = [
    ("a: 1\nb: two\n", ["ok", {"a": "1", "b": "two"}]),
    ("# comment\n\nname:  spaced value  \n", ["ok", {"name": "spaced value"}]),
    ("url: http://x:8080/p\n", ["ok", {"url": "http://x:8080/p"}]),
    ("k: 1\nk: 2\n", ["ok", {"k": "2"}]),
    ("", ["ok", {}]),
    ("no colon here\n", ["ValueError", None]),
]


def main() -> int:
    proc = subprocess.run(
        [sys.executable, "-I", "-c", CALL],
        input=json.dumps([text for text, _ in CASES]),
        capture_output=True,
        text=True,
        timeout=20,
    )
    try:
        results = json.loads(proc.stdout)
    except ValueError:
        print(f"no results (exit {proc.returncode}): {proc.stderr}")
        return 1
    if len(results) != len(CASES):
        print(f"{len(results)} results for {len(CASES)} cases")
        return 1
    bad = 0
    for (text, want), got in zip(CASES, results):
        if got != want:
            print(f"parse({text!r}) gave {got!r}, want {want!r}")
            bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
