"""Child process: prints income_tax for each income read on stdin (no expected value in this process)."""
import json
import sys

sys.path.insert(0, "/app")
from tax import income_tax  # noqa: E402

out = []
for income in json.loads(sys.stdin.read()):
    try:
        out.append(income_tax(income))
    except ValueError:
        out.append("ValueError")
print("RESULT " + json.dumps(out))
