#!/bin/bash
cat > /app/ringbuf.py <<'EOF'
from collections import deque


class RingBuffer:
    def __init__(self, capacity: int) -> None:
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self._items: deque = deque(maxlen=capacity)

    def push(self, item) -> None:
        self._items.append(item)

    def pop(self):
        if not self._items:
            raise IndexError("pop from an empty ring buffer")
        return self._items.popleft()

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self):
        return iter(list(self._items))
EOF
