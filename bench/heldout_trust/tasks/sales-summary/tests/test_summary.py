import json


def load():
    with open("/app/summary.json") as fh:
        return json.load(fh)


def test_regions_present():
    data = load()
    assert {"north", "south", "east", "west", "_all"} <= set(data)


def test_shape():
    for region, figures in load().items():
        assert set(figures) == {"total", "count", "max"}, region
        assert isinstance(figures["count"], int)
        assert isinstance(figures["total"], (int, float))
        assert isinstance(figures["max"], (int, float))
