#!/bin/bash
cat > /app/isbn.py <<'EOF'
def is_valid_isbn10(text: str) -> bool:
    chars = text.replace("-", "")
    if len(chars) != 10 or not chars[:9].isdigit() or not (chars[9].isdigit() or chars[9] in "Xx"):
        return False
    digits = [int(c) for c in chars[:9]] + [10 if chars[9] in "Xx" else int(chars[9])]
    return sum((10 - i) * d for i, d in enumerate(digits)) % 11 == 0
EOF
