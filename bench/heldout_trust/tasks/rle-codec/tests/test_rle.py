import sys

import pytest

sys.path.insert(0, "/app")
import rle  # noqa: E402

PAIRS = [
    ("aaabccdddd", "3ab2c4d"),
    ("", ""),
    ("x" * 12 + "y", "12xy"),
    ("abc", "abc"),
    ("  !!", "2 2!"),
]


@pytest.mark.parametrize("raw, expected", PAIRS)
def test_encode(raw, expected):
    assert rle.encode(raw) == expected


@pytest.mark.parametrize("expected, packed", PAIRS)
def test_decode(expected, packed):
    assert rle.decode(packed) == expected
