def to_e164(raw: str, default_country: str = "DE") -> str:
    raise NotImplementedError
