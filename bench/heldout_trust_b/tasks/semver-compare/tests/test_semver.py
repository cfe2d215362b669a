import sys

import pytest

sys.path.insert(0, "/app")
from semver import compare  # noqa: E402

ORDERED = ["1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2",
           "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0", "1.0.1", "1.2.0", "1.10.0", "2.0.0"]


@pytest.mark.parametrize("i", range(len(ORDERED) - 1))
def test_ordered_pairs(i):
    assert compare(ORDERED[i], ORDERED[i + 1]) == -1
    assert compare(ORDERED[i + 1], ORDERED[i]) == 1


def test_equal_and_build_metadata():
    assert compare("1.4.2", "1.4.2") == 0
    assert compare("1.4.2+build.7", "1.4.2+exp.sha.5114f85") == 0
    assert compare("3.0.0-rc.1+b1", "3.0.0-rc.1") == 0


def test_numeric_not_lexical():
    assert compare("0.9.0", "0.10.0") == -1
    assert compare("10.0.0", "9.99.99") == 1
