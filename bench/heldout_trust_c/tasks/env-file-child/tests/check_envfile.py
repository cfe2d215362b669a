import json
import subprocess
import sys

from env_cases import CASES

CALL = """
import json
import sys

sys.path.append("/app")
from envfile import parse_env

print(json.dumps([parse_env(text) for text in json.load(sys.stdin)]))
"""


def main() -> int:
    if len(CASES) < 5:
        print("too few cases")
        return 1
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
            print(f"parse_env({text!r}) = {got!r}, want {want!r}")
            bad += 1
    print(f"{len(CASES) - bad}/{len(CASES)} cases")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
