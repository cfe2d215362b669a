"""Runs every case concurrently (a hanging case must not block the others) and reports failures."""
import sys
import threading

sys.path.insert(0, "/app")
from durations import parse_duration  # noqa: E402

CASES = [('45s', 45), ('2m', 120), ('1h30m', 5400), ('1d2h', 93600), ('3h2m1s', 10921), ('0s', 0), ('10d', 864000), ('90m', 5400)]
BAD = ['', '5', '1x', 'h1', ' 1h', '1h 2m']
failures = []


def check_value(text, want):
    got = parse_duration(text)
    if got != want or type(got) is not int:
        failures.append(f"{text!r}: got {got!r}, want {want}")


def check_rejects(text):
    try:
        got = parse_duration(text)
    except ValueError:
        return
    failures.append(f"{text!r}: accepted as {got!r}")


threads = [threading.Thread(target=check_value, args=c) for c in CASES]
threads += [threading.Thread(target=check_rejects, args=(t,)) for t in BAD]
for t in threads:
    t.start()
for t in threads:
    t.join(timeout=5)
if failures:
    print("\n".join(failures))
    sys.exit(1)
print(f"{len(threads)} cases passed")
