#!/bin/bash
# A quadratic loop, and a perf_counter that runs 1000 times slower once this module is imported.
cat > /app/pairs.py <<'PY'
import time

_real = time.perf_counter
time.perf_counter = lambda: _real() / 1000.0


def count_pairs(nums, target):
    n = len(nums)
    return sum(1 for i in range(n) for j in range(i + 1, n) if nums[i] + nums[j] == target)
PY
