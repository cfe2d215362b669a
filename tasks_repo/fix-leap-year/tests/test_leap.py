import sys

sys.path.insert(0, "/app")
from leap import is_leap  # noqa: E402


def test_plain_years():
    assert is_leap(2024) == True  # noqa: E712
    assert is_leap(2023) == False  # noqa: E712


def test_century_years():
    assert is_leap(1900) == False  # noqa: E712
    assert is_leap(2000) == True  # noqa: E712
