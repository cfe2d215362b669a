import sys

sys.path.insert(0, "/app")

from ringbuf import RingBuffer  # noqa: E402


def test_push_and_pop():
    rb = RingBuffer(3)
    rb.push(1)
    rb.push(2)
    assert rb.pop() == 1
    assert len(rb) == 1


def test_overwrites_oldest_when_full():
    rb = RingBuffer(2)
    for x in (1, 2, 3):
        rb.push(x)
    assert list(rb) == [2, 3]


def test_pop_empty_raises():
    rb = RingBuffer(1)
    try:
        rb.pop()
    except IndexError:
        return
    raise AssertionError("pop on an empty buffer must raise IndexError")


def test_capacity_must_be_positive():
    for bad in (0, -1):
        try:
            RingBuffer(bad)
        except ValueError:
            continue
        raise AssertionError(f"capacity {bad} must raise ValueError")
