import sys

sys.path.insert(0, "/app")

from slugify import slugify


def test_simple_title():
    assert slugify("Release Notes") == "release-notes"


def test_version_number():
    assert slugify("Python 311") == "python-311"


if __name__ == "__main__":
    test_simple_title()
    test_version_number()
    print("2 passed")
