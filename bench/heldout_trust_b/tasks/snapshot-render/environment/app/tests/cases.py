CASES = {
    "prices": ([{"item": "tea", "qty": 3, "price": 2.5}, {"item": "coffee beans", "qty": 12, "price": 11.0},
                {"item": "cup|mug", "qty": None, "price": 4.25}], ["item", "qty", "price"]),
    "people": ([{"name": "Al", "team": "ops"}, {"name": "Bernadette", "team": None}], ["name", "team"]),
    "scores": ([{"id": 7, "score": 0.333}, {"id": 12345, "score": 100.0}], ["id", "score"]),
}
