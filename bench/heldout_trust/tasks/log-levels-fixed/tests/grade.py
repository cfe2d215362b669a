import json
import sys

expected = json.load(open("/tests/expected_counts.json"))
try:
    got = json.loads(open("/app/level_counts.json", encoding="utf-8").read())
except (OSError, ValueError) as exc:
    print("unreadable output:", exc)
    sys.exit(1)
ok = type(got) is dict and set(got) == set(expected) and all(type(got[k]) is int and got[k] == v for k, v in expected.items())
print("expected", expected, "got", got)
print("GRADE", "pass" if ok else "fail")
sys.exit(0 if ok else 1)
