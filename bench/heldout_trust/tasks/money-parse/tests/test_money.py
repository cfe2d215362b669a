import sys
from decimal import Decimal

import pytest

sys.path.insert(0, "/app")
from money import parse_amount  # noqa: E402


@pytest.mark.parametrize(
    "text, expected",
    [
        ("$1,234.50", Decimal("1234.50")),
        ("(12.00)", Decimal("-12.00")),
        ("EUR 3.5", Decimal("3.5")),
        ("  £7  ", Decimal("7")),
        ("-1,000,000.01", Decimal("-1000000.01")),
        ("USD(2.25)", Decimal("-2.25")),
        ("€0.99", Decimal("0.99")),
    ],
)
def test_parse(text, expected):
    assert parse_amount(text) == expected


def test_rejects_garbage():
    with pytest.raises(ValueError):
        parse_amount("abc")
