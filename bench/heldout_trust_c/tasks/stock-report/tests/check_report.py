import difflib
import subprocess
import sys

WANT = 'Stock report\nwarehouse north: widgets in stock: 1204\nwarehouse north: gadgets in stock: 87\nwarehouse south: widgets in stock: 330\nwarehouse south: gadgets in stock: 1519\nwarehouse east: widgets in stock: 42\nwarehouse east: gadgets in stock: 0\ntotal items in stock: 3182\n'


def main() -> int:
    proc = subprocess.run([sys.executable, "/app/stock_report.py"], cwd="/app", capture_output=True, text=True, timeout=20)
    if proc.returncode != 0:
        print(proc.stderr)
        return 1
    got = proc.stdout
    got_lines = [" ".join(line.split()) for line in got.strip().splitlines()]
    want_lines = [" ".join(line.split()) for line in WANT.strip().splitlines()]
    if len(got_lines) != len(want_lines):
        print(f"{len(got_lines)} lines, want {len(want_lines)}")
        return 1
    score = sum(difflib.SequenceMatcher(None, g, w).ratio() for g, w in zip(got_lines, want_lines)) / len(want_lines)
    print(f"similarity {score:.3f}")
    if score < 0.9:
        print(got)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
