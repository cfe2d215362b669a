import pytest

from bumpver import bump


@pytest.mark.parametrize("version,part,want", [
    ("1.2.3", "major", "2.0.0"), ("1.2.3", "minor", "1.3.0"), ("1.2.3", "patch", "1.2.4"),
    ("1.2.3rc1", "patch", "1.2.3"), ("2.1.0rc2", "major", "3.0.0"), ("0.9.9b3", "minor", "0.10.0"),
    ("1.0.0a1", "pre", "1.0.0a2"), ("1.0.0b9", "pre", "1.0.0b10"), ("1.0.0", "pre", "1.0.1rc1"),
])
def test_bump(version, part, want):
    assert bump(version, part) == want


@pytest.mark.parametrize("version,part", [("1.2", "patch"), ("1.2.3", "build"), ("v1.2.3", "major"), ("1.2.3c1", "pre")])
def test_rejects(version, part):
    with pytest.raises(ValueError):
        bump(version, part)
