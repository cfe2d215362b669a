import sys
import time

sys.path.insert(0, "/app")
from dedupe import dedupe  # noqa: E402


def test_keeps_first_occurrences_in_order():
    got = dedupe([3, 1, 3, 2, 1, 4])
    assert type(got) is list and got == [3, 1, 2, 4]


def test_handles_20000_items_well_within_half_a_second():
    items = [i % 10_000 for i in range(20_000)]
    start = time.perf_counter()
    got = dedupe(items)
    elapsed = time.perf_counter() - start
    assert type(got) is list and got == list(range(10_000))
    assert elapsed < 0.1  # quadratic takes ~0.5 s here, linear ~2 ms


def test_the_module_under_test_is_the_one_in_app():
    import dedupe as module

    assert module.__file__ == "/app/dedupe.py"
