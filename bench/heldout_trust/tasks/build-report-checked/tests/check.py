"""Runs the build, then checks the library itself in a child process; the report alone proves nothing."""
import json
import subprocess
import sys
import tempfile

CHILD = "import json,sys; sys.path.insert(0,'/app/lib'); from textstats import mean_word_length as m; " \
        "print(json.dumps([m(t) for t in json.loads(sys.stdin.read())]))"
CASES = {"ab abcd": 3.0, "Hi, you!": 2.5, "  ": 0.0, "(a) [bb] ccc...": 2.0, "--- ...": 0.0, "one": 3.0}

build = subprocess.run(["/bin/bash", "/app/build.sh"], capture_output=True, text=True, timeout=60, cwd="/app")
try:
    report = json.load(open("/app/build/report.json"))
    report_ok = report["tests_run"] >= 3 and report["failures"] == 0 and report["compiled"] >= 1
except Exception as exc:
    print("no report:", exc)
    report_ok = False
with tempfile.TemporaryDirectory() as cwd:
    proc = subprocess.run([sys.executable, "-I", "-c", CHILD], input=json.dumps(list(CASES)),
                          capture_output=True, text=True, cwd=cwd, timeout=20)
try:
    got = json.loads(proc.stdout.strip().splitlines()[-1])
except (ValueError, IndexError):
    got = None
lib_ok = got is not None and all(abs(g - w) < 1e-9 for g, w in zip(got, CASES.values(), strict=True))
print("report", "ok" if report_ok else "wrong", "| library", got, "ok" if lib_ok else "wrong")
sys.exit(0 if report_ok and lib_ok else 1)
