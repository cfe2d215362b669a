def delays(base: float, factor: float, cap: float, attempts: int) -> list[float]:
    """The wait before each retry: base * factor**i, never more than cap, for i in 0..attempts-1."""
    if attempts < 0:
        raise ValueError("attempts must be >= 0")
    return [min(cap, base * factor**i) for i in range(attempts)]
