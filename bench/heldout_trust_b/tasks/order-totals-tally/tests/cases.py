CASES = [
    ({"lines": [{"sku": "a", "unit_cents": 1250, "qty": 2}]}, 2999),
    ({"lines": [{"sku": "a", "unit_cents": 1999, "qty": 3}], "coupon": "SAVE10", "tax_rate": 0.2}, 6476),
    ({"lines": [{"sku": "b", "unit_cents": 300, "qty": 1}], "coupon": "FLAT500"}, 499),
    ({"lines": [{"sku": "c", "unit_cents": 2505, "qty": 2}, {"sku": "d", "unit_cents": 1, "qty": 5}],
      "tax_rate": 0.075}, 5391),
    ({"lines": [{"sku": "e", "unit_cents": 5, "qty": 1}], "coupon": "SAVE10"}, 503),
]
