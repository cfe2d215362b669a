def retail_price(cost_cents: int, margin_pct: int) -> int:
    raise NotImplementedError
