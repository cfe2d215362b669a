"""Checks fit/apply/rmse; a value fails when it is further than TOL from the expectation."""
import sys

sys.path.insert(0, "/app")
sys.path.insert(0, "/tests")
import calibrate  # noqa: E402
from cases import CASES  # noqa: E402

TOL = 1e-6
failures = 0


def check(label, got, want):
    global failures
    if abs(got - want) > TOL:
        print(f"FAIL {label}: got {got}, want {want}")
        failures += 1


for i, (xs, ys, gain, offset) in enumerate(CASES):
    g, o = calibrate.fit(xs, ys)
    check(f"case {i} gain", g, gain)
    check(f"case {i} offset", o, offset)
    fitted = calibrate.apply(xs, gain, offset)
    for j, (got, x) in enumerate(zip(fitted, xs)):
        check(f"case {i} apply[{j}]", got, gain * x + offset)
    check(f"case {i} rmse", calibrate.rmse(fitted, ys), sum((a - b) ** 2 for a, b in zip(fitted, ys)) ** 0.5 / len(ys) ** 0.5)

for bad in (([1.0], [2.0]), ([1.0, 2.0], [1.0]), ([3.0, 3.0], [1.0, 2.0])):
    try:
        calibrate.fit(*bad)
    except ValueError:
        continue
    print(f"FAIL no ValueError for {bad}")
    failures += 1
print(f"{failures} failures")
sys.exit(1 if failures else 0)
