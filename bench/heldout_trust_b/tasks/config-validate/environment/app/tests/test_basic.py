from cfgcheck import validate


def test_minimal():
    assert validate({"name": "api", "port": 8080}) == []
