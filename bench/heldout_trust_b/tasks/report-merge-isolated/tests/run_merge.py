"""Child process: runs the agent's merge_reports on one case and prints the result as JSON."""
import json
import sys

sys.path.insert(0, "/app")
import merge  # noqa: E402

case = json.load(sys.stdin)
print(json.dumps(merge.merge_reports(case["a"], case["b"])))
