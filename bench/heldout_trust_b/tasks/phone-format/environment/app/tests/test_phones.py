import sys

import pytest

sys.path.insert(0, "/app")
from phones import to_e164  # noqa: E402


@pytest.mark.parametrize("raw,country,want", [
    ("030 1234567", "DE", "+49301234567"),
    ("+33 1 42 68 53 00", "DE", "+33142685300"),
    ("0044 (20) 7946-0958", "DE", "+442079460958"),
    ("(415) 555-2671", "US", "+14155552671"),
    ("020 7946 0958", "GB", "+442079460958"),
])
def test_normalise(raw, country, want):
    assert to_e164(raw, country) == want


@pytest.mark.parametrize("raw", ["12", "+49 30 12ab567", "0049 1234567890123456"])
def test_rejects(raw):
    with pytest.raises(ValueError):
        to_e164(raw)
