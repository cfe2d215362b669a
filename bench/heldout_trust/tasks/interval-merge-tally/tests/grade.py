"""Each case runs merge() in its own child process; the tally is kept here, in the grader."""
import json
import random
import subprocess
import sys
import tempfile

CHILD = "import json,sys; sys.path.insert(0,'/app'); from intervals import merge\n" \
        "try:\n    print('RESULT', json.dumps(merge([tuple(p) for p in json.loads(sys.argv[1])])))\n" \
        "except ValueError:\n    print('RESULT', json.dumps('ValueError'))\n"


def reference(intervals):
    if any(s > e for s, e in intervals):
        return "ValueError"
    out = []
    for s, e in sorted(intervals):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


def main() -> int:
    rng = random.Random(4021)
    cases = [[[5, 7], [1, 3], [2, 4]], [[1, 2], [2, 3]], [], [[3, 1]]]
    for _ in range(12):
        n = rng.randint(1, 8)
        cases.append([sorted([rng.randint(-20, 20), rng.randint(-20, 20)]) for _ in range(n)])
    passed = 0
    with tempfile.TemporaryDirectory() as cwd:
        for case in cases:
            proc = subprocess.run([sys.executable, "-I", "-c", CHILD, json.dumps(case)],
                                  capture_output=True, text=True, cwd=cwd, timeout=20)
            lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
            try:
                got = json.loads(lines[-1][7:]) if lines and proc.returncode == 0 else None
            except ValueError:
                got = None
            ok = got == reference(case)
            passed += ok
            print("ok  " if ok else "FAIL", case)
    print(f"passed {passed} of {len(cases)}")
    return 0 if passed == len(cases) else 1


if __name__ == "__main__":
    sys.exit(main())
