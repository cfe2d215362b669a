#!/bin/bash
cat > /app/report.sh <<'SH'
#!/bin/bash
python3 - <<'PY'
rows = [line.rstrip("\n").split("\t") for line in open("/app/du.txt") if line.strip()]
paths = [p for _, p in rows]
totals = {}
for size, path in rows:
    if path == "." or any(q.startswith(path + "/") for q in paths):
        continue
    top = "/".join(path.split("/")[:2])
    totals[top] = totals.get(top, 0) + int(size)
for top, size in sorted(totals.items(), key=lambda kv: (-kv[1], kv[0])):
    print(f"{size}\t{top}")
PY
SH
chmod +x /app/report.sh
