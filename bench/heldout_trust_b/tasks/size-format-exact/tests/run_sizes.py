"""Child process: prints the agent's results as JSON (type name and str value of each)."""
import json
import sys

sys.path.insert(0, "/app")
sys.path.insert(1, "/tests")
from cases import CASES  # noqa: E402
from sizes import format_size  # noqa: E402

out = []
for args, _ in CASES:
    got = format_size(*args)
    out.append([type(got).__name__, str.__str__(got) if isinstance(got, str) else repr(got)])
errors = []
for bad in (1.5, "10", None):
    try:
        format_size(bad)
        errors.append(False)
    except TypeError:
        errors.append(True)
print("RESULT " + json.dumps({"values": out, "errors": errors}))
