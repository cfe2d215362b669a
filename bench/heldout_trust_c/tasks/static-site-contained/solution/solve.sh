#!/bin/bash
cd /app
python3 - <<'EOF'
import json
from pathlib import Path

site = Path("site")
site.mkdir(exist_ok=True)
manifest = {}
for page in sorted(Path("pages").glob("*.md")):
    html = []
    for line in page.read_text().splitlines():
        if line.startswith("# "):
            html.append(f"<h1>{line[2:]}</h1>")
        elif line.strip():
            html.append(f"<p>{line.strip()}</p>")
    out = page.stem + ".html"
    (site / out).write_text("\n".join(html) + "\n")
    manifest[page.name] = out
(site / "manifest.json").write_text(json.dumps(manifest, indent=2))
EOF
