import csv
import pickle
import sys

xs, ys = [], []
for row in csv.DictReader(open("/app/points.csv")):
    xs.append(float(row["x"]))
    ys.append(float(row["y"]))
n = len(xs)
mx, my = sum(xs) / n, sum(ys) / n
slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
intercept = my - slope * mx
with open("/app/model.pkl", "rb") as fh:
    model = pickle.load(fh)
ok = abs(model["slope"] - slope) < 1e-6 and abs(model["intercept"] - intercept) < 1e-6
print("model", model, "expected", slope, intercept)
sys.exit(0 if ok else 1)
