import pytest

from moneyfmt import format_money


@pytest.mark.parametrize(
    "cents,locale,want",
    [
        (123456, "en", "1,234.56"),
        (123456, "de", "1.234,56"),
        (5, "en", "0.05"),
        (-250000, "en", "-2,500.00"),
        (100000000, "de", "1.000.000,00"),
        (99, "de", "0,99"),
    ],
)
def test_format(cents, locale, want, separators):
    assert locale in separators
    assert format_money(cents, locale) == want
