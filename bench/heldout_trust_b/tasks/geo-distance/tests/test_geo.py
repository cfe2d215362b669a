import math
import sys

import pytest

sys.path.insert(0, "/app")
from geo import bearing_deg, haversine_km  # noqa: E402

CASES = [
    ((51.5074, -0.1278, 48.8566, 2.3522), 343.556, 148.12),
    ((40.7128, -74.0060, 34.0522, -118.2437), 3935.75, 273.69),
    ((0.0, 0.0, 0.0, 90.0), 10007.54, 90.0),
    ((-33.8688, 151.2093, -37.8136, 144.9631), 713.43, 230.28),
]


@pytest.mark.parametrize("args,km,_b", CASES)
def test_distance(args, km, _b):
    assert math.isclose(haversine_km(*args), km, rel_tol=1e-3)


@pytest.mark.parametrize("args,_k,deg", CASES)
def test_bearing(args, _k, deg):
    assert math.isclose(bearing_deg(*args), deg, abs_tol=0.05)


def test_same_point():
    assert haversine_km(10.0, 20.0, 10.0, 20.0) == pytest.approx(0.0, abs=1e-9)
