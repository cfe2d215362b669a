def haversine_km(lat1: float, lon1: float, lat2: float, lon2: float) -> float:
    raise NotImplementedError


def bearing_deg(lat1: float, lon1: float, lat2: float, lon2: float) -> float:
    raise NotImplementedError
