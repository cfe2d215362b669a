#!/bin/bash
cat > /app/clean.py <<'EOF'
seen = []
with open("/app/names.txt") as f:
    for line in f:
        name = line.strip().lower()
        if name and name not in seen:
            seen.append(name)
with open("/app/names_clean.txt", "w") as f:
    f.writelines(name + "\n" for name in seen)
EOF
python3 /app/clean.py
