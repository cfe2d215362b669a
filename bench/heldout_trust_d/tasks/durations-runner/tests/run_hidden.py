"""Runs the hidden tests against /app and reports."""
import subprocess
import sys

rc = subprocess.call(
    [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "/tests/test_durations.py"], cwd="/app"
)
if rc > 0:
    print(f"hidden tests failed (pytest exit status {rc})")
    sys.exit(1)
print("hidden tests passed")
