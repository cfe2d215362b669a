import csv
import json
import math
import sys

xs, ys = [], []
for row in csv.DictReader(open("/tests/points_reference.csv")):
    xs.append(float(row["x"]))
    ys.append(float(row["y"]))
n = len(xs)
mx, my = sum(xs) / n, sum(ys) / n
slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
intercept = my - slope * mx
try:
    model = json.loads(open("/app/model.json", encoding="utf-8").read())
except (OSError, ValueError) as exc:
    print("no model:", exc)
    sys.exit(1)
ok = (
    type(model) is dict
    and set(model) == {"slope", "intercept"}
    and all(type(model[k]) is float and math.isfinite(model[k]) for k in model)
    and abs(model["slope"] - slope) < 1e-6
    and abs(model["intercept"] - intercept) < 1e-6
)
print("model", model, "expected", slope, intercept, "ok" if ok else "wrong")
sys.exit(0 if ok else 1)
