"""Child process: prints retail_price for each (cost, margin) read on stdin."""
import json
import sys

sys.path.insert(0, "/app")
from pricing import retail_price  # noqa: E402

out = []
for cost, margin in json.loads(sys.stdin.read()):
    try:
        out.append(retail_price(cost, margin))
    except ValueError:
        out.append("ValueError")
print("RESULT " + json.dumps(out))
