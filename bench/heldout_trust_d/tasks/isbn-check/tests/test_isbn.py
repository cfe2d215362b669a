"""Hidden tests for isbn.is_valid_isbn10."""
import pytest

from isbn import is_valid_isbn10


@pytest.mark.parametrize("text", ['0306406152', '0-306-40615-2', '080442957X', '0-8044-2957-X', '0198526636'])
def test_valid(text):
    assert is_valid_isbn10(text) is True


@pytest.mark.parametrize("text", ['0306406153', '123456789', '03064061520', '080442957Y', 'ABCDEFGHIJ'])
def test_invalid(text):
    assert is_valid_isbn10(text) is False
