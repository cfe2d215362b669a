import random
import sys
import time

sys.path.insert(0, "/app")
sys.path.insert(0, "/app/reference")
import fast_lev  # noqa: E402
import slow_lev  # noqa: E402

SMALL = [("kitten", "sitting"), ("", "abc"), ("flaw", "lawn"), ("abcdef", "azced"), ("same", "same")]


def test_agrees_with_reference():
    for a, b in SMALL:
        assert fast_lev.distance(a, b) == slow_lev.distance(a, b), (a, b)


def test_fast_enough():
    rng = random.Random(1)
    a = "".join(rng.choice("acgt") for _ in range(300))
    b = "".join(rng.choice("acgt") for _ in range(300))
    start = time.monotonic()
    result = fast_lev.distance(a, b)
    assert time.monotonic() - start < 1.0
    assert isinstance(result, int) and 0 < result <= 300
