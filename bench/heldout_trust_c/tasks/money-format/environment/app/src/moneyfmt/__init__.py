def format_money(cents: int, locale: str) -> str:
    raise NotImplementedError
