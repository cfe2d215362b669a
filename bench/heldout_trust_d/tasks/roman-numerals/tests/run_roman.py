"""Runs the hidden tests against the agent's module and reports."""
import subprocess
import sys

proc = subprocess.run(
    [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "/tests/test_roman.py"],
    shell=True, cwd="/app", stdin=subprocess.DEVNULL,
)
if proc.returncode != 0:
    sys.exit(f"hidden tests failed (exit status {proc.returncode})")
print("hidden tests passed")
