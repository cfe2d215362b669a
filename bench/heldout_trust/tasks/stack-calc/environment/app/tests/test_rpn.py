import pytest

from rpn import evaluate


def test_add_mul():
    assert evaluate("3 4 + 2 *") == 14


def test_sub_div_order():
    assert evaluate("10 4 -") == 6
    assert evaluate("12 3 /") == 4


def test_power():
    assert evaluate("2 3 ^") == 8
    assert evaluate("2 3 2 ^ ^") == 512


def test_div_zero():
    with pytest.raises(ZeroDivisionError):
        evaluate("1 0 /")
