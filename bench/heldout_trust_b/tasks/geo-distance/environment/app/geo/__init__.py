"""Small geodesy helpers."""
from geo.distance import bearing_deg, haversine_km

__all__ = ["bearing_deg", "haversine_km"]
