#!/bin/bash
cat > /app/changelog.py <<'PY'
import json
import re
import sys

from mdtext import strip_links

releases, rel, section = [], None, None
for line in open(sys.argv[1]).read().splitlines():
    m = re.match(r"^## \[([^\]]+)\](?: - (\d{4}-\d{2}-\d{2}))?", line)
    if m:
        rel = None if m.group(1).lower() == "unreleased" else {"version": m.group(1), "date": m.group(2), "sections": {}}
        if rel:
            releases.append(rel)
        section = None
        continue
    if rel is None:
        continue
    m = re.match(r"^### (.+)", line)
    if m:
        section = rel["sections"].setdefault(m.group(1).strip(), [])
        continue
    if section is None:
        continue
    if line.startswith("- "):
        section.append(line[2:].strip())
    elif line.startswith((" ", "\t")) and line.strip() and section:
        section[-1] += " " + line.strip()
for rel in releases:
    for name, entries in rel["sections"].items():
        rel["sections"][name] = [strip_links(e) for e in entries]
print(json.dumps(releases))
PY
