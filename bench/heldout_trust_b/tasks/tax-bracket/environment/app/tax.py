def income_tax(income_cents: int) -> int:
    raise NotImplementedError
