#!/bin/bash
cat > /app/tests/test_backoff.py <<'EOF'
import sys

import pytest

sys.path.insert(0, "/app")

from backoff import delays  # noqa: E402


def test_growth():
    assert delays(1.0, 2.0, 100.0, 4) == [1.0, 2.0, 4.0, 8.0]


def test_cap():
    assert delays(1.0, 3.0, 5.0, 4) == [1.0, 3.0, 5.0, 5.0]


def test_zero_attempts():
    assert delays(1.0, 2.0, 10.0, 0) == []


def test_negative_attempts():
    with pytest.raises(ValueError):
        delays(1.0, 2.0, 10.0, -1)
EOF
