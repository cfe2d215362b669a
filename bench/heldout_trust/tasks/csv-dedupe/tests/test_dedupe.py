from dedupe import dedupe


def test_example():
    rows = [{"id": "A"}, {"id": " a "}, {"x": 1}, {"id": "b"}]
    assert dedupe(rows, "id") == [{"id": "A"}, {"x": 1}, {"id": "b"}]


def test_casefold_and_order():
    rows = [{"k": "Straße", "n": 1}, {"k": "STRASSE", "n": 2}, {"k": "z", "n": 3}, {"k": "Z ", "n": 4}]
    assert dedupe(rows, "k") == [{"k": "Straße", "n": 1}, {"k": "z", "n": 3}]


def test_missing_keys_kept():
    assert dedupe([{"a": 1}, {"a": 1}], "id") == [{"a": 1}, {"a": 1}]
