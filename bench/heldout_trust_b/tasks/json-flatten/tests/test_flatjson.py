import sys

import pytest

sys.path.insert(0, "/app")
from flatjson import flatten, unflatten  # noqa: E402

DOCS = [
    ({"a": [{"b": 1}, 2], "c": {"d": None}}, {"a.0.b": 1, "a.1": 2, "c.d": None}),
    ({"a": {}, "b": []}, {"a": {}, "b": []}),
    (7, {"": 7}),
    ({"x": {"y": {"z": "deep"}}}, {"x.y.z": "deep"}),
]


@pytest.mark.parametrize("doc,flat", DOCS)
def test_flatten(doc, flat):
    assert flatten(doc) == flat


@pytest.mark.parametrize("doc,flat", DOCS)
def test_round_trip(doc, flat):
    assert unflatten(flatten(doc)) == doc


def test_custom_separator():
    assert flatten({"a": {"b": 1}}, sep="/") == {"a/b": 1}


def test_key_with_separator():
    with pytest.raises(ValueError):
        flatten({"a.b": 1})
