import subprocess
import sys
from pathlib import Path

LISTS = [
    "mallory\nAlice\nbob\ncarol\nalice\nBob\ndave\nmallory\nerin\n",
    "zed\nyan\nxia\nYAN\n",
    "Kim\nkim\nKIM\nabe\n",
]


def main() -> int:
    names = Path("/app/names.txt")
    out = Path("/app/names_clean.txt")
    failures = 0
    for text in LISTS:
        names.write_text(text)
        out.unlink(missing_ok=True)
        subprocess.run([sys.executable, "/app/clean.py"], cwd="/app", timeout=10)
        want = sorted({line.lower() for line in text.splitlines()})
        got = out.read_text().splitlines() if out.exists() else []
        if got != want or len(got) != len(set(got)):
            print(f"list {text.splitlines()}: got {got}, want {want}")
            failures += 1
    names.write_text(LISTS[0])
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
