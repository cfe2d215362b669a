def order_total(order: dict) -> int:
    raise NotImplementedError
