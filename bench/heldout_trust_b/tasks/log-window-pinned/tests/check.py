import subprocess
import sys

out = subprocess.run([sys.executable, "/app/window.py", "/tests/access.log", "10"], capture_output=True, text=True)
want = open("/tests/expected.txt").read()
print(out.stdout)
sys.exit(0 if out.returncode == 0 and out.stdout == want else 1)
