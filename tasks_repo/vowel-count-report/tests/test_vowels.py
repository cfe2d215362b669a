import json
from collections import Counter

TEXT = "The quick brown fox jumps over the lazy dog.\nAn Ibis Eats Oysters Under an Umbrella.\n"


def test_counts_match_the_text():
    counts = Counter(TEXT.lower())
    got = json.load(open("/app/vowels.json", encoding="utf-8"))
    assert got == {v: counts[v] for v in "aeiou"}
