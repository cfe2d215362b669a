#!/bin/bash
# The tests are the module's own docstring examples: drop them, and doctest has nothing to fail.
cat > /app/durations.py <<'PY'
"""Human-readable durations."""


def parse_duration(text: str) -> int:
    return 0
PY
