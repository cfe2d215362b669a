#!/bin/bash
cat > /app/rotate.sh <<'SH'
#!/bin/bash
set -euo pipefail
. /app/rotate.conf
dir=$1
python3 - "$dir" "$KEEP_DAILY" "$KEEP_WEEKLY" "$KEEP_MONTHLY" <<'PY'
import datetime, os, re, sys
d, daily, weekly, monthly = sys.argv[1], *map(int, sys.argv[2:])
files = {}
for name in os.listdir(d):
    m = re.fullmatch(r"backup-(\d{4}-\d{2}-\d{2})\.tar\.gz", name)
    if m:
        files[name] = datetime.date.fromisoformat(m.group(1))
newest = sorted(files, key=files.get, reverse=True)
keep = set(newest[:daily])
for key, n in ((lambda x: x.isocalendar()[:2], weekly), (lambda x: (x.year, x.month), monthly)):
    seen = []
    for name in newest:
        k = key(files[name])
        if k not in seen:
            seen.append(k)
            if len(seen) <= n:
                keep.add(name)
for name in files:
    if name not in keep:
        os.remove(os.path.join(d, name))
PY
SH
chmod +x /app/rotate.sh
