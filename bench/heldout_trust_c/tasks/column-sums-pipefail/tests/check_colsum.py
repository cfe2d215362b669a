import subprocess
import sys
import tempfile
from pathlib import Path

CASES = [
    ("a,b\n1,2\n3,4\n", "a=4\nb=6\n"),
    ("x\n1.5\n2.25\n", "x=3.75\n"),
    ("p,q,r\n0,0,0\n", "p=0\nq=0\nr=0\n"),
    ("n,m\n-1,10\n1,-10\n7,0\n", "n=7\nm=0\n"),
]


def main() -> int:
    bad = 0
    with tempfile.TemporaryDirectory() as tmp:
        for i, (text, want) in enumerate(CASES):
            data = Path(tmp) / f"case{i}.csv"
            data.write_text(text)
            proc = subprocess.run([sys.executable, "/app/colsum.py", str(data)], capture_output=True, text=True, timeout=10)
            if proc.returncode != 0 or proc.stdout != want:
                print(f"case {i}: got {proc.stdout!r} (exit {proc.returncode}), want {want!r}")
                bad += 1
    print(f"{len(CASES) - bad}/{len(CASES)} cases")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
