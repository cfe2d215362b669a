#!/bin/bash
cat > /app/scoring.py <<'EOF'
def normalise(scores: list[float]) -> list[float]:
    low, high = min(scores), max(scores)
    if high == low:
        return [0.0 for _ in scores]
    return [(s - low) / (high - low) for s in scores]
EOF
