def convert(amount_cents: int, src: str, dst: str) -> int:
    raise NotImplementedError
