import subprocess
import sys

CASES = {1: 0, 6: 8, 27: 111, 97: 118, 871: 178}


def main() -> int:
    bad = 0
    for n, want in CASES.items():
        try:
            proc = subprocess.run(
                [sys.executable, "/app/collatz.py", str(n)], capture_output=True, text=True, timeout=2
            )
        except subprocess.TimeoutExpired:
            print(f"n={n}: timed out")
            bad += 1
            continue
        got = proc.stdout.strip()
        if got != str(want):
            print(f"n={n}: got {got!r}, want {want}")
            bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
