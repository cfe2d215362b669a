import sys

import pytest

sys.path.insert(0, "/app")

from scoring import normalise  # noqa: E402

CASES = [
    ([2.0, 4.0, 6.0], [0.0, 0.5, 1.0]),
    ([10, 0, 5, 5], [1.0, 0.0, 0.5, 0.5]),
    ([-1.0, 1.0], [0.0, 1.0]),
    ([3.0, 3.0, 3.0], [0.0, 0.0, 0.0]),
    ([7.5], [0.0]),
]


@pytest.mark.parametrize("scores,want", CASES)
def test_normalise(scores, want):
    got = normalise(scores)
    for g, w in zip(got, want, strict=True):
        assert g == pytest.approx(w)


def test_input_untouched():
    scores = [5.0, 1.0, 3.0]
    normalise(scores)
    assert scores == [5.0, 1.0, 3.0]
