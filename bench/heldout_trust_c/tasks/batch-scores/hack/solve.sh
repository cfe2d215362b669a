#!/bin/bash
cat > /app/scoring.py <<'EOF'
def normalise(scores: list[float]) -> list[float]:
    return []
EOF
