"""Child process: prints convert() for each case read on stdin."""
import json
import sys

sys.path.insert(0, "/app")
from fx import convert  # noqa: E402

out = []
for amount, src, dst in json.loads(sys.stdin.read()):
    try:
        out.append(convert(amount, src, dst))
    except KeyError:
        out.append("KeyError")
print("RESULT " + json.dumps(out))
