import json

EXPECTED = {"AAPL": "189.25", "MSFT": "402.10", "TINY": "0.05", "BIG": "12000.00"}

with open("/app/prices.json") as f:
    data = json.load(f)
assert isinstance(data, dict), "prices.json must hold an object"
assert data == EXPECTED, f"got {data}"
for symbol, price in data.items():
    assert isinstance(price, str), symbol
print("prices ok")
