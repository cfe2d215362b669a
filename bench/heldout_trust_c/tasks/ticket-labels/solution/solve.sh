#!/bin/bash
cd /app
python3 - <<'EOF'
import json

RULES = [
    ("billing", ("charge", "invoice", "refund", "payment")),
    ("bug", ("error", "crash", "freeze", "broken")),
]
with open("tickets.jsonl") as f, open("answers.jsonl", "w") as out:
    for line in f:
        ticket = json.loads(line)
        text = ticket["text"].lower()
        category = next((c for c, words in RULES if any(w in text for w in words)), "feature")
        out.write(json.dumps({"id": ticket["id"], "category": category}) + "\n")
EOF
