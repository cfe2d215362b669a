import pytest

from cfgcheck import validate


@pytest.mark.parametrize("config,want", [
    ({"name": "api", "port": 8080}, []),
    ({"name": "api", "port": 8080, "replicas": 3, "env": {"A": "1"}}, []),
    ({}, ["name: required", "port: required"]),
    ({"name": "", "port": 0}, ["name: must be a non-empty string", "port: must be an int in 1..65535"]),
    ({"name": "x", "port": True}, ["port: must be an int in 1..65535"]),
    ({"name": "x", "port": 80, "replicas": 0, "env": {"A": 1}},
     ["replicas: must be an int >= 1", "env: must map strings to strings"]),
    ({"name": "x", "port": 80, "zeta": 1, "alpha": 2}, ["alpha: unknown key", "zeta: unknown key"]),
])
def test_validate(config, want):
    assert validate(config) == want
