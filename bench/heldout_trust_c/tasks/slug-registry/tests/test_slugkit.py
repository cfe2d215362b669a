import pytest

from slugkit import slugify


@pytest.mark.parametrize(
    "text,want",
    [
        ("Hello World", "hello-world"),
        ("  Trim  me  ", "trim-me"),
        ("Rock & Roll!", "rock-roll"),
        ("already-a-slug", "already-a-slug"),
        ("Crème brûlée", "creme-brulee"),
        ("a--b__c", "a-b-c"),
        ("", ""),
    ],
)
def test_slugify(text, want):
    assert slugify(text) == want
