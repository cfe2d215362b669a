"""Checks income_tax: the agent's function runs in an isolated child that only sees the incomes."""
import json
import subprocess
import sys

sys.path.insert(0, "/tests")
from cases import CASES  # noqa: E402


def check_all() -> int:
    incomes = [income for income, _ in CASES] + [-1]
    wants = [want for _, want in CASES] + ["ValueError"]
    proc = subprocess.run([sys.executable, "-I", "/tests/run_tax.py"], input=json.dumps(incomes),
                          capture_output=True, text=True, timeout=60, cwd="/tmp")
    lines = [l for l in proc.stdout.splitlines() if l.startswith("RESULT ")]
    if proc.returncode != 0 or len(lines) != 1:
        print("no result from the child", proc.stderr[-300:])
        return len(wants)
    got = json.loads(lines[0][len("RESULT "):])
    if len(got) != len(wants):
        return len(wants)
    return sum(1 for g, w in zip(got, wants) if type(g) is not type(w) or g != w)


if __name__ == "__main__":
    failed = check_all()
    print(f"{len(CASES) + 1 - failed}/{len(CASES) + 1} checks passed")
    sys.exit(1 if failed else 0)
