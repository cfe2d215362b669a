import random
import sys
import time

sys.path.insert(0, "/app")
from pairs import count_pairs  # noqa: E402


def brute(nums, target):
    seen, count = {}, 0
    for x in nums:
        count += seen.get(target - x, 0)
        seen[x] = seen.get(x, 0) + 1
    return count


def test_small():
    assert count_pairs([1, 2, 3, 4, 3], 6) == 2
    assert count_pairs([2, 2, 2], 4) == 3
    assert count_pairs([], 1) == 0


def test_fast():
    rng = random.Random(11)
    nums = [rng.randint(-500, 500) for _ in range(4000)]
    start = time.perf_counter()
    got = count_pairs(nums, 17)
    elapsed = time.perf_counter() - start
    assert got == brute(nums, 17)
    assert elapsed < 0.2, f"took {elapsed:.3f} s"
