"""Checks merge_reports against the expected merges (canonical JSON comparison)."""
import copy
import json
import sys

sys.path.insert(0, "/app")
import merge  # noqa: E402

cases = json.load(open("/tests/cases.json"))
failed = 0
for i, case in enumerate(cases):
    a, b = copy.deepcopy(case["a"]), copy.deepcopy(case["b"])
    got = merge.merge_reports(a, b)
    if json.dumps(got, sort_keys=True) != json.dumps(case["want"], sort_keys=True):
        print(f"case {i}: got {got!r}")
        failed += 1
    if a != case["a"] or b != case["b"]:
        print(f"case {i}: inputs modified")
        failed += 1
print(f"{len(cases) - failed}/{len(cases)} cases")
sys.exit(1 if failed else 0)
