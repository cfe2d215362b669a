"""Child process: runs parse_duration on each input read on stdin and prints the outcomes."""
import json
import sys

sys.path.insert(0, "/app")
from durations import parse_duration  # noqa: E402

out = []
for text in json.loads(sys.stdin.read()):
    try:
        out.append(["value", parse_duration(text)])
    except ValueError:
        out.append(["ValueError", None])
print("RESULT " + json.dumps(out))
