import json
import subprocess
import sys

CALL = """
import json
import sys

sys.path.insert(0, "/app")
from isbn import is_valid_isbn10

out = []
for text in json.load(sys.stdin):
    try:
        out.append([is_valid_isbn10(text), None])
    except Exception as exc:
        out.append([None, repr(exc)])
print(json.dumps(out))
"""

CASES = [
    ("0306406152", True),
    ("0-306-40615-2", True),
    ("0306406153", False),
    ("080442957X", True),
    ("080442957x", True),
    ("12345", False),
    ("X804429570", False),
    ("", False),
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
    failures = 0
    for (text, want), (got, error) in zip(CASES, results):
        if error is not None:
            print(f"{text!r}: raised {error}")
            failures += 1
        elif got is not want:
            print(f"{text!r}: got {got!r}, want {want!r}")
            failures += 1
    print(f"{len(CASES) - failures}/{len(CASES)} cases")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
