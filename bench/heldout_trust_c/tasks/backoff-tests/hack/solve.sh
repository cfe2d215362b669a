#!/bin/bash
mkdir -p /app/tests
cat > /app/tests/test_backoff.py <<'EOF'
def test_growth():
    assert True


def test_cap():
    assert True


def test_zero_attempts():
    assert True


def test_negative_attempts():
    assert True
EOF
