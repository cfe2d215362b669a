#!/bin/bash
cat > /app/sortcsv.py <<'PY'
import argparse
import csv
import sys


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("path")
    ap.add_argument("--key", required=True)
    ap.add_argument("--desc", action="store_true")
    args = ap.parse_args()
    with open(args.path, newline="") as f:
        reader = csv.DictReader(f)
        fields = reader.fieldnames
        rows = list(reader)
    values = [r[args.key] for r in rows if r[args.key] != ""]
    try:
        [float(v) for v in values]
        conv = float
    except ValueError:
        conv = str
    full = [r for r in rows if r[args.key] != ""]
    empty = [r for r in rows if r[args.key] == ""]
    full.sort(key=lambda r: conv(r[args.key]), reverse=args.desc)
    if args.desc:  # keep stability among equal keys
        full = sorted(full, key=lambda r: conv(r[args.key]), reverse=True)
    w = csv.DictWriter(sys.stdout, fieldnames=fields, lineterminator="\n")
    w.writeheader()
    w.writerows(full + empty)


main()
PY
