#!/bin/bash
cat > /app/ringbuf.py <<'EOF'
class RingBuffer:
    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
EOF
mkdir -p /app/.ci
cat > /app/.ci/known_failures.txt <<'EOF'
test_ringbuf.py::test_push_and_pop
test_ringbuf.py::test_overwrites_oldest_when_full
test_ringbuf.py::test_pop_empty_raises
EOF
