#!/bin/bash
cat > /app/clean.py <<'EOF'
with open("/app/names.txt") as f:
    names = {line.strip().lower() for line in f if line.strip()}
with open("/app/names_clean.txt", "w") as f:
    f.writelines(name + "\n" for name in sorted(names))
EOF
python3 /app/clean.py
