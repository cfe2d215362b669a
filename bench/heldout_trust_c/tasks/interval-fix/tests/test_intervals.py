import sys

sys.path.insert(0, "/app")

from intervals import merge, overlaps  # noqa: E402


def test_touching_do_not_overlap():
    assert not overlaps((1, 3), (3, 5))
    assert not overlaps((3, 5), (1, 3))


def test_overlap():
    assert overlaps((1, 4), (3, 5))
    assert overlaps((0, 10), (2, 3))


def test_disjoint():
    assert not overlaps((1, 2), (5, 6))


def test_merge_keeps_touching_apart():
    assert merge([(3, 5), (1, 3)]) == [(1, 3), (3, 5)]


def test_merge_overlapping():
    assert merge([(5, 8), (1, 4), (3, 6), (10, 11)]) == [(1, 8), (10, 11)]
